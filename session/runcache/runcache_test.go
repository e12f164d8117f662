package runcache_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/session/runcache"
)

func open(t *testing.T, root, key string, max int64) *runcache.Cache {
	t.Helper()
	c, err := runcache.Open(root, runcache.Meta{Worker: "w", WorkerKey: key}, max)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// fill writes an entry of n bytes under the cache's home, last used at.
func fill(t *testing.T, c *runcache.Cache, entry string, n int, at time.Time) {
	t.Helper()
	dir := filepath.Join(c.Dir(), entry, "sub")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "data")
	if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

func entries(t *testing.T, c *runcache.Cache) []string {
	t.Helper()
	ents, err := os.ReadDir(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func begin(t *testing.T, c *runcache.Cache) func() {
	t.Helper()
	end, err := c.Begin(os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// Over its bound, a cache loses whole entries, least recently used first,
// until it is under; a read-only tree (Go's module cache) goes too, and a
// symlink out of the cache is removed, never followed.
func TestTrimEvictsLeastRecentlyUsedEntries(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	c := open(t, root, "file:/w.md", 3<<20)
	begin(t, c)() // makes home
	now := time.Now()
	fill(t, c, "go-build", 1<<20, now.Add(-time.Hour))
	fill(t, c, "pip", 1<<20, now.Add(-72*time.Hour))
	fill(t, c, "npm", 1<<20, now.Add(-48*time.Hour))
	fill(t, c, "go-mod", 1<<20, now.Add(-24*time.Hour))
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("keep me\n"), 0o644)
	os.Symlink(filepath.Dir(outside), filepath.Join(c.Dir(), "pip", "link"))
	// Go's module cache is read-only.
	os.Chmod(filepath.Join(c.Dir(), "pip", "sub"), 0o555)
	os.Chmod(filepath.Join(c.Dir(), "pip"), 0o555)

	u, evicted, err := c.Trim()
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, e := range evicted {
		gone = append(gone, e.Name)
	}
	if !slices.Equal(gone, []string{"pip", "npm"}) {
		t.Errorf("evicted %v, want the two least recently used: pip, npm", gone)
	}
	if got := entries(t, c); !slices.Equal(got, []string{"go-build", "go-mod"}) {
		t.Errorf("left %v", got)
	}
	if u.Bytes > c.Max() {
		t.Errorf("%d bytes left, over the bound of %d", u.Bytes, c.Max())
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep me\n" {
		t.Errorf("eviction followed a symlink out: %q %v", b, err)
	}
	if trash, _ := filepath.Glob(filepath.Join(root, "*", "trash-*")); len(trash) != 0 {
		t.Errorf("left in the trash: %v", trash)
	}
	// Under the bound, nothing goes.
	if _, evicted, err := c.Trim(); err != nil || len(evicted) != 0 {
		t.Errorf("a cache under its bound: evicted %v, %v", evicted, err)
	}
}

// Nothing is evicted or cleared under a run in flight, in this process or
// another: the run holds the cache until it ends.
func TestNoEvictionUnderARun(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	c := open(t, root, "file:/w.md", 1<<20)
	end := begin(t, c)
	fill(t, c, "go-build", 2<<20, time.Now())
	if _, evicted, err := c.Trim(); !errors.Is(err, runcache.ErrBusy) || len(evicted) != 0 {
		t.Fatalf("trim under a run: evicted %v, %v", evicted, err)
	}
	if _, err := runcache.Clear(root, c.Meta().ID); !errors.Is(err, runcache.ErrBusy) {
		t.Fatalf("clear under a run: %v", err)
	}
	if l, err := runcache.Lookup(root, c.Meta().ID); err != nil || !l.InUse {
		t.Errorf("a cache under a run is not shown in use: %+v %v", l, err)
	}
	if got := entries(t, c); !slices.Equal(got, []string{"go-build"}) {
		t.Errorf("left %v", got)
	}
	end()
	// The end of the run trims in the background; wait for that, then
	// trim here: one of the two evicted it.
	c.Close()
	if _, _, err := c.Trim(); err != nil {
		t.Errorf("a trim after the run: %v", err)
	}
	if got := entries(t, c); len(got) != 0 {
		t.Errorf("after the run, the cache over its bound still holds %v", got)
	}
}

// After a run ends the cache is measured and trimmed in the background;
// Close waits for it.
func TestEndOfARunTrims(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	c := open(t, root, "file:/w.md", 1<<20)
	end := begin(t, c)
	fill(t, c, "go-build", 2<<20, time.Now())
	end()
	c.Close()
	if got := entries(t, c); len(got) != 0 {
		t.Errorf("after the run the cache still holds %v over its bound", got)
	}
}

// Each worker has a cache of its own; list shows them, clear empties one
// and leaves the other.
func TestListAndClear(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	a := open(t, root, "file:/a.md", 1<<30)
	b := open(t, root, "file:/b.md", 1<<30)
	if a.Dir() == b.Dir() {
		t.Fatal("two workers share a cache")
	}
	for _, c := range []*runcache.Cache{a, b} {
		begin(t, c)()
		fill(t, c, "pip", 64<<10, time.Now())
	}
	list, err := runcache.List(root)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	for _, l := range list {
		if l.Usage.Bytes < 64<<10 || l.Used.IsZero() || l.InUse || len(l.Usage.Entries) != 1 || l.Usage.Entries[0].Name != "pip" {
			t.Errorf("listed %+v", l)
		}
	}
	freed, err := runcache.Clear(root, a.Meta().ID)
	if err != nil || freed < 64<<10 {
		t.Fatalf("clear: freed %d, %v", freed, err)
	}
	if _, err := os.Stat(a.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a cleared cache still has its home: %v", err)
	}
	if got := entries(t, b); len(got) != 1 {
		t.Errorf("clearing a emptied b: %v", got)
	}
	// The next run of a finds it empty, and ready.
	begin(t, a)()
	if got := entries(t, a); len(got) != 0 {
		t.Errorf("after clear: %v", got)
	}
	if _, err := runcache.Lookup(root, "nope"); !errors.Is(err, runcache.ErrNoCache) {
		t.Errorf("lookup of no cache: %v", err)
	}
	if _, err := runcache.Lookup(root, "../x"); !errors.Is(err, runcache.ErrNoCache) {
		t.Errorf("lookup of a path: %v", err)
	}
}
