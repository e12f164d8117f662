package memfs_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	billymemfs "github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/util"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs"
)

const (
	benchFiles    = 10_000
	benchFileSize = 2048 // 10,000 x 2 KB = 20 MB
)

var benchPaths = func() []string {
	p := make([]string, benchFiles)
	for i := range p {
		p[i] = fmt.Sprintf("d%02d/f%05d.txt", i%100, i)
	}
	return p
}()

// BenchmarkWrite10k writes 10,000 files of 2 KB into a fresh workspace. The
// peers, in the same run: go-billy's memfs (no guard, no lock, no quotas,
// no tracking) and the OS filesystem in a temporary directory.
func BenchmarkWrite10k(b *testing.B) {
	data := make([]byte, benchFileSize)
	b.Run("airlock", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(benchFiles * benchFileSize)
		for b.Loop() {
			w, _ := memfs.New()
			for _, p := range benchPaths {
				if err := w.WriteFile(p, data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("go-billy-memfs", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(benchFiles * benchFileSize)
		for b.Loop() {
			fs := billymemfs.New()
			for _, p := range benchPaths {
				if err := util.WriteFile(fs, p, data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("os-tempdir", func(b *testing.B) {
		b.SetBytes(benchFiles * benchFileSize)
		for b.Loop() {
			dir := b.TempDir()
			for i := 0; i < 100; i++ {
				os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%02d", i)), 0o755)
			}
			for _, p := range benchPaths {
				if err := os.WriteFile(filepath.Join(dir, p), data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkCheckpoint takes a checkpoint of a 10,000-file, 20 MB workspace.
// B/op is what a checkpoint costs in memory by itself.
func BenchmarkCheckpoint(b *testing.B) {
	const perWorkspace = 1 << 16
	w := seeded(b, benchFiles, benchFileSize, memfs.WithLimits(memfs.Limits{MaxCheckpoints: perWorkspace}))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == perWorkspace {
			b.StopTimer()
			w = seeded(b, benchFiles, benchFileSize, memfs.WithLimits(memfs.Limits{MaxCheckpoints: perWorkspace}))
			i = 0
			b.StartTimer()
		}
		if _, err := w.Checkpoint(strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEditRollback is a worker's undo on the same workspace: edit one
// file, roll back to the checkpoint taken before.
func BenchmarkEditRollback(b *testing.B) {
	w := seeded(b, benchFiles, benchFileSize)
	if _, err := w.Checkpoint("cp"); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchFileSize)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.WriteFile(benchPaths[1234], data, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Rollback("cp"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChanges10Edits lists what changed after 10 edits in a
// 10,000-file workspace. The peer is `git status --porcelain` on the same
// tree on disk, with the same 10 edits.
func BenchmarkChanges10Edits(b *testing.B) {
	edit := func(i int) string { return benchPaths[i*997] }
	b.Run("airlock", func(b *testing.B) {
		w := seeded(b, benchFiles, benchFileSize)
		for i := 0; i < 10; i++ {
			mustWrite(b, w, edit(i), "edited")
		}
		b.ReportAllocs()
		for b.Loop() {
			if n := len(w.Changes()); n != 10 {
				b.Fatalf("%d changes", n)
			}
		}
	})
	b.Run("git-status", func(b *testing.B) {
		gitBin, err := exec.LookPath("git")
		if err != nil {
			b.Skip("git not installed")
		}
		dir := b.TempDir()
		data := make([]byte, benchFileSize)
		for i := 0; i < 100; i++ {
			os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%02d", i)), 0o755)
		}
		for i, p := range benchPaths {
			copy(data, fmt.Sprintf("file %d\n", i))
			os.WriteFile(filepath.Join(dir, p), data, 0o644)
		}
		git := func(args ...string) []byte {
			cmd := exec.Command(gitBin, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
				"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("git %v: %v", args, err)
			}
			return out
		}
		git("init", "-q", ".")
		git("add", "-A")
		git("commit", "-qm", "base")
		for i := 0; i < 10; i++ {
			os.WriteFile(filepath.Join(dir, edit(i)), []byte("edited"), 0o644)
		}
		git("status", "--porcelain") // refresh the index once, as a user's repository would be
		for b.Loop() {
			git("status", "--porcelain")
		}
	})
}

// BenchmarkCheckPath is the path guard on a typical path.
func BenchmarkCheckPath(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pathguard.CheckPath("src/internal/server/handlers/user_profile.go"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkManyCheckpoints lists the checkpoints and the changes of a
// 10,000-file workspace that has 90 checkpoints, each after 10 more edits
// (900 touched paths): both should cost what changed, not checkpoints
// times touched paths.
func BenchmarkManyCheckpoints(b *testing.B) {
	w := seeded(b, benchFiles, benchFileSize, memfs.WithLimits(memfs.Limits{MaxCheckpoints: 100}))
	for c := 0; c < 90; c++ {
		for j := 0; j < 10; j++ {
			if err := w.WriteFile(benchPaths[(c*10+j)*7%benchFiles], []byte(fmt.Sprintf("edit %d %d", c, j)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Checkpoint(""); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("checkpoints", func(b *testing.B) {
		for b.Loop() {
			if n := len(w.Checkpoints()); n != 90 {
				b.Fatal(n)
			}
		}
	})
	b.Run("changes", func(b *testing.B) {
		for b.Loop() {
			if n := len(w.Changes()); n != 900 {
				b.Fatal(n)
			}
		}
	})
}

// BenchmarkLatestCheckpoint is what git_status pays for the checkpoints
// line with 90 checkpoints: the latest one only.
func BenchmarkLatestCheckpoint(b *testing.B) {
	w := seeded(b, benchFiles, benchFileSize, memfs.WithLimits(memfs.Limits{MaxCheckpoints: 100}))
	for c := 0; c < 90; c++ {
		for j := 0; j < 10; j++ {
			w.WriteFile(benchPaths[(c*10+j)*7%benchFiles], []byte(fmt.Sprintf("edit %d %d", c, j)), 0o644)
		}
		w.Checkpoint("")
	}
	for b.Loop() {
		if n, _ := w.LatestCheckpoint(); n != 90 {
			b.Fatal(n)
		}
	}
}

// BenchmarkQuotaRefusal compares, in the same run, a 4 KiB write the byte
// quota refuses with a 4 KiB write it accepts, on a 100,000-file workspace
// with a few checkpoints. A refusal recounts what the workspace holds (its
// tally may overcount) and says what keeps memory; both should cost what
// differs between the live tree, the base and the checkpoints, not the
// number of files. x-accepted is the refused write's time over the
// accepted one's.
func BenchmarkQuotaRefusal(b *testing.B) {
	const files = 100_000
	data := make([]byte, 4<<10)
	setup := func(maxBytes int64) *memfs.Workspace {
		w := seeded(b, files, 64, memfs.WithLimits(memfs.Limits{MaxTotalBytes: maxBytes, MaxFiles: 2 * files, MaxCheckpoints: 100}))
		for c := 0; c < 5; c++ {
			// The same ten files each time: every checkpoint keeps a version.
			for j := 0; j < 10; j++ {
				k := j * 997
				if err := w.WriteFile(fmt.Sprintf("d%02d/f%05d.txt", k%100, k), make([]byte, 1024+c), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := w.Checkpoint(""); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.WriteFile("d07/f00007.txt", data, 0); err != nil {
			b.Fatal(err)
		}
		return w
	}
	// Room for 2 KiB more: rewriting the file of 4 KiB fits
	// again and again, a second such file does not.
	_, held := setup(1 << 30).Usage()
	w := setup(held.Bytes + 2<<10)
	if err := w.WriteFile("d08/f00008.txt", data, 0); !strings.Contains(fmt.Sprint(err), "kept only by checkpoints") {
		b.Fatalf("the refusal does not say what checkpoints keep: %v", err)
	}
	var accepted float64
	b.Run("accepted", func(b *testing.B) {
		for b.Loop() {
			if err := w.WriteFile("d07/f00007.txt", data, 0); err != nil {
				b.Fatal(err)
			}
		}
		accepted = float64(b.Elapsed()) / float64(b.N)
	})
	b.Run("refused", func(b *testing.B) {
		for b.Loop() {
			if err := w.WriteFile("d08/f00008.txt", data, 0); !errors.Is(err, memfs.ErrQuotaExceeded) {
				b.Fatal(err)
			}
		}
		if accepted > 0 {
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/accepted, "x-accepted")
		}
	})
}
