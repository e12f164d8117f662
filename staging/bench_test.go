package staging_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/memfs"
)

const (
	benchFiles    = 10_000
	benchFileSize = 2048
)

func benchPath(i int) string { return fmt.Sprintf("d%02d/f%05d.txt", i%100, i) }

func benchContent(i int) []byte {
	data := make([]byte, benchFileSize)
	copy(data, fmt.Sprintf("file %d\n", i))
	return data
}

// fastDir is a temporary directory on tmpfs when the machine has one, so
// that the git peer runs as fast as it can.
func fastDir(b *testing.B) string {
	b.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "airlock-bench-")
		if err == nil {
			b.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return b.TempDir()
}

// BenchmarkStage10kNewFiles stages 10,000 new 2 KB files; the peer is
// `git add -A && git commit` of the same files on tmpfs, in the same run.
func BenchmarkStage10kNewFiles(b *testing.B) {
	b.Run("airlock", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			e := newEnv(b)
			for j := 0; j < benchFiles; j++ {
				if err := e.ws.WriteFile(benchPath(j), benchContent(j), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			if _, err := e.area.Stage(nil, "x"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("git-add-commit", func(b *testing.B) {
		gitBin := needGit(b)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dir := fastDir(b)
			cmd := exec.Command(gitBin, "init", "-q", dir)
			cmd.Env = gitEnv()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			for j := 0; j < 100; j++ {
				os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%02d", j)), 0o755)
			}
			for j := 0; j < benchFiles; j++ {
				os.WriteFile(filepath.Join(dir, benchPath(j)), benchContent(j), 0o644)
			}
			b.StartTimer()
			cmd = exec.Command("sh", "-c", "git add -A && git commit -q -m x")
			cmd.Dir = dir
			cmd.Env = benchGitEnv()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}

// seededBench is an area with 10,000 files of 2 KB staged as a first
// commit.
func seededBench(b *testing.B) *env {
	b.Helper()
	e := newEnv(b, memfs.WithLimits(memfs.Limits{MaxTotalBytes: 4 << 30}))
	for j := 0; j < benchFiles; j++ {
		if err := e.ws.WriteFile(benchPath(j), benchContent(j), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := e.area.Stage(nil, "base"); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkStatus10Edits is Status after 10 edits in a 10,000-file
// workspace; the peer is `git status --porcelain` on the same tree on
// tmpfs with the same edits.
func BenchmarkStatus10Edits(b *testing.B) {
	edit := func(j int) string { return benchPath(j * 997) }
	b.Run("airlock", func(b *testing.B) {
		e := seededBench(b)
		for j := 0; j < 10; j++ {
			e.write(b, edit(j), "edited")
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if st := e.area.Status(); len(st.Unstaged) != 10 {
				b.Fatalf("%d unstaged", len(st.Unstaged))
			}
		}
	})
	b.Run("git-status", func(b *testing.B) {
		gitBin := needGit(b)
		dir := fastDir(b)
		env := benchGitEnv()
		sh := shellIn(b, dir)
		sh("git init -q .")
		for j := 0; j < 100; j++ {
			os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%02d", j)), 0o755)
		}
		for j := 0; j < benchFiles; j++ {
			os.WriteFile(filepath.Join(dir, benchPath(j)), benchContent(j), 0o644)
		}
		sh("git add -A && git commit -q -m base")
		for j := 0; j < 10; j++ {
			os.WriteFile(filepath.Join(dir, edit(j)), []byte("edited"), 0o644)
		}
		sh("git status --porcelain >/dev/null") // refresh the index once
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(gitBin, "status", "--porcelain")
			cmd.Dir, cmd.Env = dir, env
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStage10EditsOn10kBase stages 10 edits on top of a 10,000-file
// base: only the changed subtrees are rebuilt. Target: under 5 ms.
func BenchmarkStage10EditsOn10kBase(b *testing.B) {
	e := seededBench(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := 0; j < 10; j++ {
			e.write(b, benchPath((i*10+j)*37%benchFiles), fmt.Sprintf("edit %d %d", i, j))
		}
		b.StartTimer()
		if _, err := e.area.Stage(nil, "ten edits"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStageMemory reports what staging 10,000 new 2 KB files leaves
// held in memory (workspace, snapshots and object store together), as a
// multiple of the content size.
func BenchmarkStageMemory(b *testing.B) {
	content := float64(benchFiles * benchFileSize)
	var ratio float64
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		e := newEnv(b)
		for j := 0; j < benchFiles; j++ {
			if err := e.ws.WriteFile(benchPath(j), benchContent(j), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := e.area.Stage(nil, "x"); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		ratio = float64(after.HeapInuse-before.HeapInuse) / content
		runtime.KeepAlive(e)
	}
	b.ReportMetric(ratio, "x-content-held")
}

// fiveMB is a 5 MB text file of ~100k lines, and an edit of it: 300 lines
// changed, inserted or removed in places all over it.
func fiveMB() (before, after []byte) {
	var b, a strings.Builder
	for i := 0; b.Len() < 5<<20; i++ {
		line := fmt.Sprintf("%06d the quick brown fox jumps over the lazy dog %d\n", i, i*7919%1000)
		b.WriteString(line)
		switch {
		case i%331 == 7:
			a.WriteString("changed " + line)
		case i%997 == 3:
			a.WriteString(line + "inserted line\n")
		case i%1499 == 5:
		default:
			a.WriteString(line)
		}
	}
	return []byte(b.String()), []byte(a.String())
}

// BenchmarkDiff5MB diffs a 5 MB text file change and renders it; the peer
// is `git diff` of the same change on tmpfs.
func BenchmarkDiff5MB(b *testing.B) {
	before, after := fiveMB()
	b.Run("airlock", func(b *testing.B) {
		e := newEnv(b, memfs.WithLimits(memfs.Limits{MaxFileBytes: 64 << 20}))
		if err := e.ws.WriteFile("big.txt", before, 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := e.area.Stage(nil, "base"); err != nil {
			b.Fatal(err)
		}
		if err := e.ws.WriteFile("big.txt", after, 0o644); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p, err := e.area.DiffUnstaged()
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Format(io.Discard, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("git-diff", func(b *testing.B) {
		gitBin := needGit(b)
		dir := fastDir(b)
		env := benchGitEnv()
		sh := shellIn(b, dir)
		sh("git init -q .")
		os.WriteFile(filepath.Join(dir, "big.txt"), before, 0o644)
		sh("git add -A && git commit -q -m base")
		os.WriteFile(filepath.Join(dir, "big.txt"), after, 0o644)
		sh("git status >/dev/null")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(gitBin, "diff")
			cmd.Dir, cmd.Env, cmd.Stdout = dir, env, io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// shellIn runs shell scripts (git commands, mostly) in dir, as a person
// would, failing the benchmark on an error.
func shellIn(b *testing.B, dir string) func(script string) {
	env := benchGitEnv()
	return func(script string) {
		b.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v: %s", script, err, out)
		}
	}
}

func benchGitEnv() []string {
	return gitEnv("GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
}

// BenchmarkStage10EditsByWidth stages 10 edits on bases of 1,000, 10,000
// and 100,000 files in 100 directories (so directories grow with the base):
// the time should not grow with it. Goal: under 2 ms at 100,000.
func BenchmarkStage10EditsByWidth(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			e := newEnv(b, memfs.WithLimits(memfs.Limits{MaxTotalBytes: 4 << 30, MaxFiles: 200_000}))
			small := []byte("base content\n")
			for j := 0; j < n; j++ {
				if err := e.ws.WriteFile(benchPath(j), small, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := e.area.Stage(nil, "base"); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for j := 0; j < 10; j++ {
					e.write(b, benchPath((i*10+j)*37%n), fmt.Sprintf("edit %d %d", i, j))
				}
				b.StartTimer()
				if _, err := e.area.Stage(nil, "ten edits"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
