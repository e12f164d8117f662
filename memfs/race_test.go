package memfs_test

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentUse runs readers, writers, renamers, streaming handles,
// checkpoints and rollbacks at once, through all three views. Run under
// -race it proves the locking; it also checks that the tallies still match a
// recount afterwards. (go-billy's memfs has no lock at all: see
// DESIGN.md.)
func TestConcurrentUse(t *testing.T) {
	d := 2 * time.Second
	if testing.Short() {
		d = 300 * time.Millisecond
	}
	w := newWorkspace(t)
	b := w.Billy()
	names := []string{"a", "b", "c", "dir/a", "dir/b", "dir/sub/c", "other/x"}
	stop := time.Now().Add(d)
	var ops atomic.Int64
	var wg sync.WaitGroup
	worker := func(seed uint64, body func(rng *rand.Rand, name string)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for time.Now().Before(stop) {
				body(rng, names[rng.IntN(len(names))])
				ops.Add(1)
			}
		}()
	}
	for i := 0; i < 3; i++ {
		worker(uint64(i), func(rng *rand.Rand, name string) {
			w.WriteFile(name, []byte(fmt.Sprintf("%d", rng.Int())), 0o644)
		})
		worker(uint64(10+i), func(rng *rand.Rand, name string) {
			w.ReadFile(name)
			w.Stat(name)
			w.ReadDir("dir")
		})
	}
	worker(20, func(rng *rand.Rand, name string) { w.Rename(name, names[rng.IntN(len(names))]) })
	worker(21, func(rng *rand.Rand, name string) { w.RemoveAll(name) })
	worker(22, func(rng *rand.Rand, name string) {
		if f, err := b.Create(name); err == nil {
			f.Write([]byte("billy"))
			f.Close()
		}
		b.ReadDir("/dir")
	})
	worker(23, func(rng *rand.Rand, name string) {
		f, err := w.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return
		}
		for i := 0; i < 20; i++ {
			if _, err := f.Write([]byte("stream ")); err != nil {
				break
			}
		}
		f.Seek(0, io.SeekStart)
		io.ReadAll(f)
		f.Close()
	})
	worker(24, func(rng *rand.Rand, name string) {
		switch rng.IntN(4) {
		case 0:
			w.Checkpoint("")
		case 1:
			w.Rollback("")
		case 2:
			w.Changes()
		case 3:
			w.Checkpoints()
		}
	})
	worker(25, func(rng *rand.Rand, name string) {
		fs.WalkDir(w.FS(), ".", func(string, fs.DirEntry, error) error { return nil })
		w.Symlink("a", name)
		w.Chmod(name, 0o755)
	})
	wg.Wait()
	t.Logf("%d operations in %v", ops.Load(), d)
	checkAccounting(t, w, true)
}
