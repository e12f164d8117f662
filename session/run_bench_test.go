package session_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
)

// benchRunEnv is a session with n files and commands enabled, its mirror
// brought up to date by one run before the timer starts.
func benchRunEnv(b *testing.B, n int) *env {
	b.Helper()
	needSandbox(b)
	r := repo(b, true, map[string]string{"README.md": "# p\n"})
	// The default mirror directory, on /dev/shm, as airlock serve has it.
	e := newEnv(b, r, config{limits: memfs.Limits{MaxFiles: 2 * n, MaxDirs: n + 2000}, run: &session.RunOptions{}})
	for i := 0; i < n; i++ {
		e.write(b, fmt.Sprintf("d%03d/f%d.txt", i%1000, i), fmt.Sprintf("file %d\n", i))
	}
	start := time.Now()
	if _, err := e.s.Run(context.Background(), session.RunArgs{Argv: []string{"true"}}, nil); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d files: the first run (the mirror written whole) took %s", n, time.Since(start))
	return e
}

// BenchmarkRunTrue10k is issue 12's overhead figure: `run true` on a
// 10,000-file workspace against starting true directly, with the run's
// time split into the mirror's sync, the jail (set-up and the command) and
// bringing the changes back.
func BenchmarkRunTrue10k(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	// paced: as a worker's runs are, seconds apart, so the warm helper is
	// ready; back-to-back: the next run starts as the last one ends.
	for _, pace := range []time.Duration{200 * time.Millisecond, 0} {
		name := "airlock-paced"
		if pace == 0 {
			name = "airlock-back-to-back"
		}
		b.Run(name, func(b *testing.B) {
			e := benchRunEnv(b, 10_000)
			var sync, jail, apply time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if pace > 0 {
					b.StopTimer()
					time.Sleep(pace)
					b.StartTimer()
				}
				res, err := e.s.Run(context.Background(), session.RunArgs{Argv: []string{"true"}}, nil)
				if err != nil || res.Exit != 0 {
					b.Fatal(res, err)
				}
				sync += res.Sync
				jail += res.Duration
				apply += res.Apply
			}
			b.ReportMetric(float64(sync.Microseconds())/float64(b.N), "sync-µs/op")
			b.ReportMetric(float64(jail.Microseconds())/float64(b.N), "jail-µs/op")
			b.ReportMetric(float64(apply.Microseconds())/float64(b.N), "apply-µs/op")
		})
	}
}

// BenchmarkRunChangesBack shows bringing a run's changes back costs what
// the run changed, not what the workspace holds: a run that edits one file
// and adds one, at 1,000 and 100,000 files.
func BenchmarkRunChangesBack(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			e := benchRunEnv(b, n)
			var sync, apply time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := e.s.Run(context.Background(), session.RunArgs{Command: fmt.Sprintf("echo %d >> d000/f0.txt; echo %d > new%d.txt", i, i, i)}, nil)
				if err != nil || res.Exit != 0 || len(res.Created) != 1 {
					b.Fatal(res, err)
				}
				sync += res.Sync
				apply += res.Apply
			}
			b.ReportMetric(float64((sync+apply).Microseconds())/float64(b.N), "sync+apply-µs/op")
		})
	}
}

// BenchmarkGoTestInside is `go test` of a real package (internal/glob)
// in the sandbox against the same command on a tmpfs copy on the host,
// both with a warm build cache.
func BenchmarkGoTestInside(b *testing.B) {
	goBin := "/usr/local/go/bin/go"
	if _, err := os.Stat(goBin); err != nil {
		b.Skip("no Go toolchain at /usr/local/go")
	}
	src, err := os.ReadDir("../internal/glob")
	if err != nil {
		b.Fatal(err)
	}
	files := map[string]string{"go.mod": "module example.com/glob\n\ngo 1.24\n"}
	for _, f := range src {
		data, err := os.ReadFile(filepath.Join("../internal/glob", f.Name()))
		if err != nil {
			b.Fatal(err)
		}
		files[f.Name()] = string(data)
	}
	args := []string{"test", "-count=1", "-run", "TestMatch|TestAgainstNaive", "."}
	b.Run("host-tmpfs", func(b *testing.B) {
		dir, err := os.MkdirTemp("/dev/shm", "airlock-bench-")
		if err != nil {
			b.Skip(err)
		}
		defer os.RemoveAll(dir)
		for p, c := range files {
			os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)
		}
		cache := filepath.Join(dir, ".cache")
		goCmd := func() {
			cmd := exec.Command(goBin, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
		}
		goCmd() // warm the cache
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			goCmd()
		}
	})
	b.Run("airlock", func(b *testing.B) {
		needSandbox(b)
		r := repo(b, true, files)
		e := newEnv(b, r, config{run: &session.RunOptions{}})
		run := func() {
			res, err := e.s.Run(context.Background(), session.RunArgs{Argv: append([]string{"go"}, args...)}, nil)
			if err != nil || res.Exit != 0 {
				b.Fatalf("%+v %v", res, err)
			}
		}
		run() // warm the session's cache
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run()
		}
	})
}

// BenchmarkRunWrites10k is a run writing 10,000 files of 2 KB, then one
// removing them, through a session (no MCP, no journal): where the time
// of bringing many changes back goes.
func BenchmarkRunWrites10k(b *testing.B) {
	needSandbox(b)
	e := newEnv(b, repo(b, true, map[string]string{"README.md": "# p\n"}), config{limits: memfs.Limits{MaxFiles: 100_000}, run: &session.RunOptions{}})
	write := "/usr/bin/python3 -c \"import os\nos.makedirs('o', exist_ok=True)\nfor i in range(10000):\n    open('o/f%d' % i, 'w').write('%d' % i + 'x' * 2040)\""
	var sync, jail, apply time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, cmd := range []string{write, "rm -rf o"} {
			res, err := e.s.Run(context.Background(), session.RunArgs{Command: cmd}, nil)
			if err != nil || res.Exit != 0 {
				b.Fatal(res, err)
			}
			sync += res.Sync
			jail += res.Duration
			apply += res.Apply
		}
	}
	b.ReportMetric(float64(sync.Milliseconds())/float64(b.N), "sync-ms/op")
	b.ReportMetric(float64(jail.Milliseconds())/float64(b.N), "jail-ms/op")
	b.ReportMetric(float64(apply.Milliseconds())/float64(b.N), "apply-ms/op")
}
