package memfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/memfs"
)

func TestPerFileQuota(t *testing.T) {
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxFileBytes: 1000}))
	mustWrite(t, w, "f", "before")
	err := w.WriteFile("f", make([]byte, 1001), 0)
	if !errors.Is(err, memfs.ErrQuotaExceeded) || !strings.Contains(err.Error(), "per-file limit") {
		t.Fatalf("WriteFile over the limit: %v", err)
	}
	if got, _ := w.ReadFile("f"); string(got) != "before" {
		t.Errorf("f = %q after a refused write", got)
	}
	if err := w.WriteFile("f", make([]byte, 1000), 0); err != nil {
		t.Errorf("a write at the limit: %v", err)
	}
	if err := w.Edit("f", func(b []byte) ([]byte, error) { return append(b, 'x'), nil }); !errors.Is(err, memfs.ErrQuotaExceeded) {
		t.Errorf("Edit over the limit: %v", err)
	}
}

// A worker streaming through an open handle hits the quota at the call that
// would cross it, and that call leaves the file exactly as it was.
func TestQuotaHoldsAgainstStreamingWrites(t *testing.T) {
	for _, lim := range []memfs.Limits{{MaxFileBytes: 10_000}, {MaxTotalBytes: 10_000}} {
		t.Run(fmt.Sprintf("%+v", lim), func(t *testing.T) {
			for _, view := range []string{"worker", "billy"} {
				w := newWorkspace(t, memfs.WithLimits(lim))
				var f interface {
					Write([]byte) (int, error)
					Close() error
				}
				var err error
				if view == "worker" {
					f, err = w.OpenFile("stream.bin", os.O_WRONLY|os.O_CREATE, 0o644)
				} else {
					f, err = w.Billy().Create("stream.bin")
				}
				if err != nil {
					t.Fatal(err)
				}
				var written bytes.Buffer
				chunk := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz"), 10) // 360 bytes
				for i := 0; ; i++ {
					chunk[0] = byte('A' + i%26)
					n, err := f.Write(chunk)
					if err != nil {
						if !errors.Is(err, memfs.ErrQuotaExceeded) || n != 0 {
							t.Fatalf("%s: write %d: n=%d err=%v", view, i, n, err)
						}
						break
					}
					written.Write(chunk)
					if i > 1000 {
						t.Fatalf("%s: quota never hit", view)
					}
				}
				got, _ := w.ReadFile("stream.bin")
				if !bytes.Equal(got, written.Bytes()) || len(got) > 10_000 || len(got) < 10_000-len(chunk) {
					t.Errorf("%s: file is %d bytes after the refused write, want the %d accepted ones", view, len(got), written.Len())
				}
				// Truncate and WriteAt far beyond the limit fail without allocating.
				if wf, ok := f.(interface{ Truncate(int64) error }); ok {
					if err := wf.Truncate(1 << 40); !errors.Is(err, memfs.ErrQuotaExceeded) {
						t.Errorf("%s: Truncate(1 TiB): %v", view, err)
					}
				}
				f.Close()
			}
		})
	}
}

func TestTotalQuotaAcrossFiles(t *testing.T) {
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxTotalBytes: 10_000}))
	var i int
	for ; i < 1000; i++ {
		err := w.WriteFile(fmt.Sprintf("f%d", i), make([]byte, 1000), 0)
		if err != nil {
			if !errors.Is(err, memfs.ErrQuotaExceeded) {
				t.Fatal(err)
			}
			break
		}
	}
	if i != 10 {
		t.Errorf("%d files of 1000 bytes fit in 10000", i)
	}
	if _, err := w.Stat(fmt.Sprintf("f%d", i)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused write created its file: %v", err)
	}
	// Deleting is always possible, and frees room.
	if err := w.Remove("f0"); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("again", make([]byte, 1000), 0); err != nil {
		t.Errorf("after freeing room: %v", err)
	}
}

func TestCountQuotas(t *testing.T) {
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxFiles: 3, MaxDirs: 3}))
	mustWrite(t, w, "a", "")
	mustWrite(t, w, "b", "")
	if err := w.Symlink("a", "c"); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("d", nil, 0); !errors.Is(err, memfs.ErrQuotaExceeded) {
		t.Errorf("4th file: %v", err)
	}
	if err := w.Symlink("a", "e"); !errors.Is(err, memfs.ErrQuotaExceeded) {
		t.Errorf("4th entry as a symlink: %v", err)
	}
	if err := w.MkdirAll("x/y/z", 0o755); err != nil {
		t.Fatal(err)
	}
	// A MkdirAll that would cross the limit makes none of its directories.
	if err := w.MkdirAll("p/q", 0o755); !errors.Is(err, memfs.ErrQuotaExceeded) {
		t.Errorf("4th directory: %v", err)
	}
	if _, err := w.Stat("p"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refused MkdirAll left p behind: %v", err)
	}
	if err := w.WriteFile("m/n", nil, 0); !errors.Is(err, memfs.ErrQuotaExceeded) {
		t.Errorf("a write needing a 4th directory: %v", err)
	}
}

// Checkpoints keep old versions alive; the quota counts them, so writing
// and checkpointing in a loop cannot grow memory past it.
func TestQuotaCountsWhatCheckpointsKeep(t *testing.T) {
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxTotalBytes: 10_000}))
	var err error
	var i int
	for ; i < 100; i++ {
		if err = w.WriteFile("f", bytes.Repeat([]byte{byte(i)}, 3000), 0); err != nil {
			break
		}
		if _, err = w.Checkpoint(""); err != nil {
			break
		}
	}
	if !errors.Is(err, memfs.ErrQuotaExceeded) || !strings.Contains(err.Error(), "checkpoints") {
		t.Fatalf("after %d rounds: %v", i, err)
	}
	if i != 3 {
		t.Errorf("%d versions of 3000 bytes were kept within 10000", i)
	}
	for _, cp := range w.Checkpoints()[:2] {
		if err := w.DeleteCheckpoint(cp.Name); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteFile("f", bytes.Repeat([]byte{'z'}, 3000), 0); err != nil {
		t.Errorf("after deleting checkpoints: %v", err)
	}
	checkAccounting(t, w, false)
}

func TestMaxCheckpoints(t *testing.T) {
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxCheckpoints: 2}))
	w.Checkpoint("a")
	w.Checkpoint("b")
	if _, err := w.Checkpoint("c"); !errors.Is(err, memfs.ErrQuotaExceeded) {
		t.Errorf("3rd checkpoint: %v", err)
	}
}

func TestSeedOverQuotaChangesNothing(t *testing.T) {
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxTotalBytes: 1000}))
	mustWrite(t, w, "keep", "me")
	_, err := w.Seed([]memfs.SeedFile{{Path: "a", Mode: 0o644, Data: make([]byte, 600)}, {Path: "b", Mode: 0o644, Data: make([]byte, 600)}})
	if !errors.Is(err, memfs.ErrQuotaExceeded) {
		t.Fatalf("Seed over quota: %v", err)
	}
	if got, _ := w.ReadFile("keep"); string(got) != "me" {
		t.Error("a refused Seed changed the workspace")
	}
}

// The process cannot be grown past the quota by a hostile loop of writes,
// appends and checkpoints.
func TestHostileLoopStaysWithinQuota(t *testing.T) {
	const quota = 16 << 20
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxTotalBytes: quota, MaxFileBytes: 4 << 20, MaxCheckpoints: 1000}))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	chunk := make([]byte, 64<<10)
	refused := 0
	for i := 0; i < 400; i++ {
		name := fmt.Sprintf("f%d", i%8)
		switch i % 4 {
		case 0:
			if err := w.WriteFile(name, make([]byte, 1<<20), 0); err != nil {
				refused++
			}
		case 1:
			f, err := w.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			for j := 0; j < 16; j++ {
				if _, err := f.Write(chunk); err != nil {
					refused++
					break
				}
			}
			f.Close()
		case 2:
			w.Checkpoint("")
		case 3:
			w.Remove(name)
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	if refused == 0 {
		t.Fatal("the loop was never refused: the quota did not bite")
	}
	if grown > 2*quota {
		t.Errorf("heap grew by %d MiB for a %d MiB quota", grown>>20, quota>>20)
	}
	checkAccounting(t, w, false)
}

// checkAccounting compares the incremental tallies with a recount. The held
// tally may overcount after checkpoints were deleted (until a quota check
// recounts), never undercount.
func checkAccounting(t testing.TB, w *memfs.Workspace, exact bool) {
	t.Helper()
	live, held := w.Usage()
	xlive, xheld := memfs.ExactUsage(w)
	if live != xlive {
		t.Errorf("live tally %+v, recount %+v", live, xlive)
	}
	if exact && held != xheld || held.Bytes < xheld.Bytes || held.Files < xheld.Files || held.Dirs < xheld.Dirs {
		t.Errorf("held tally %+v, recount %+v", held, xheld)
	}
}

// Issue 11: checkpoint, write, keep the live state as a snapshot (what
// staging a commit does), roll back; again and again. The rollback used to
// restore the tally taken with the checkpoint, which missed the kept
// snapshots: 20 MiB held under a 4 MiB quota. The quota must hold.
func TestRollbackKeepsKeptSnapshotsInTheTally(t *testing.T) {
	const quota = 4 << 20
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxTotalBytes: quota}))
	var kept []*memfs.Snapshot
	refused := false
	for i := 0; i < 10 && !refused; i++ {
		if _, err := w.Checkpoint(""); err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte{byte('a' + i)}, 2<<20)
		if err := w.WriteFile(fmt.Sprintf("f%d", i), data, 0o644); err != nil {
			if !errors.Is(err, memfs.ErrQuotaExceeded) {
				t.Fatal(err)
			}
			refused = true
			break
		}
		kept = append(kept, w.Snapshot())
		w.SetBase(w.Base(), kept...)
		if _, err := w.Rollback(""); err != nil {
			t.Fatal(err)
		}
		checkAccounting(t, w, false)
		if _, held := memfs.ExactUsage(w); held.Bytes > quota {
			t.Fatalf("cycle %d: %d bytes held under a %d-byte quota", i, held.Bytes, quota)
		}
	}
	if !refused {
		t.Fatal("ten 2 MiB writes kept in snapshots never met the 4 MiB quota")
	}
}

// A refusal does not count the workspace again: a run bringing in twice
// the file quota after a checkpoint (its files all new since) has the
// second half refused one by one, and each costs about what a write does.
func TestQuotaRefusalsDoNotRecount(t *testing.T) {
	const n = 20_000
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxFiles: n}))
	if _, err := w.Checkpoint("before"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := w.WriteFile(fmt.Sprintf("d/f%d", i), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for i := n; i < 2*n; i++ {
		if err := w.WriteFile(fmt.Sprintf("d/f%d", i), nil, 0o644); !errors.Is(err, memfs.ErrQuotaExceeded) {
			t.Fatalf("write %d over the file quota: %v", i, err)
		}
		// Counted each time, this is n walks of n files: minutes.
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%d refusals took %s", i-n+1, d)
		}
	}
	// What frees room is seen: a removal, then a write fits again.
	if err := w.Remove("d/f0"); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("d/again", nil, 0o644); err != nil {
		t.Errorf("a write after a removal: %v", err)
	}
	if err := w.DeleteCheckpoint("before"); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("d/more", nil, 0o644); !errors.Is(err, memfs.ErrQuotaExceeded) {
		t.Errorf("at the limit again: %v", err)
	}
}
