//go:build linux

package targets_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/gitdir"
)

// A lazy base pulled from a working-tree repository reads a file from the
// working tree when it holds the blob exactly, and from git otherwise; it
// never follows a symlink there, out of the tree or within it, and never
// waits on a FIFO. Each blob's object is removed from the repository
// where the test needs to see where a read came from: a read that
// succeeds then came from the working tree, one that fails did not.
func TestLazyReadsFromTheWorkingTree(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	files := map[string]string{
		"same.txt": "checked out as committed\n", "edited.txt": "committed\n", "linked.txt": "linked away\n",
		"fifo.txt": "a fifo now\n", "sub/deep.txt": "under a linked directory\n", "inner.txt": "linked within\n",
	}
	commitFiles(t, dir, files)
	ids := map[string]string{}
	for p := range files {
		ids[p] = strings.TrimSpace(run(t, dir, nil, nil, "rev-parse", "HEAD:"+p))
	}
	sb := pulled(t, dir, false)
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The working tree changes after the pull.
	must(os.WriteFile(filepath.Join(dir, "edited.txt"), []byte("COMMITTED\n"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "linked.txt"), []byte(files["linked.txt"]), 0o644))
	must(os.Remove(filepath.Join(dir, "linked.txt")))
	must(os.Symlink(filepath.Join(outside, "linked.txt"), filepath.Join(dir, "linked.txt")))
	must(os.Remove(filepath.Join(dir, "fifo.txt")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.txt"), 0o644))
	must(os.MkdirAll(filepath.Join(outside, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(outside, "sub", "deep.txt"), []byte(files["sub/deep.txt"]), 0o644))
	must(os.RemoveAll(filepath.Join(dir, "sub")))
	must(os.Symlink(filepath.Join(outside, "sub"), filepath.Join(dir, "sub")))
	must(os.WriteFile(filepath.Join(dir, "real-inner.txt"), []byte(files["inner.txt"]), 0o644))
	must(os.Remove(filepath.Join(dir, "inner.txt")))
	must(os.Symlink("real-inner.txt", filepath.Join(dir, "inner.txt")))
	for _, p := range []string{"same.txt", "linked.txt", "sub/deep.txt", "inner.txt"} {
		must(os.Remove(filepath.Join(dir, ".git", "objects", ids[p][:2], ids[p][2:])))
	}

	read := func(p string) (string, error) {
		done := make(chan struct{})
		var got []byte
		var err error
		go func() {
			defer close(done)
			got, err = sb.ws.ReadFile(p)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("reading %s hangs", p)
		}
		return string(got), err
	}
	for _, c := range []struct {
		path     string
		readable bool
	}{
		{"same.txt", true},      // its object is gone: read from the working tree
		{"edited.txt", true},    // edited there: read from git
		{"fifo.txt", true},      // a FIFO there: read from git, without waiting
		{"linked.txt", false},   // a symlink out of the tree: not followed, and git lost it
		{"sub/deep.txt", false}, // below a linked directory: not followed either
		{"inner.txt", false},    // a symlink within the tree: not followed either
	} {
		got, err := read(c.path)
		switch {
		case c.readable && (err != nil || got != files[c.path]):
			t.Errorf("%s: %q, %v; want the committed content", c.path, got, err)
		case !c.readable && err == nil:
			t.Errorf("%s was read (%q) through a symlink in the working tree", c.path, got)
		case !c.readable && !strings.Contains(err.Error(), memfs.ErrUnavailable.Error()):
			t.Errorf("%s: %v", c.path, err)
		}
	}
}

// A checked-out file whose stat is as git's index recorded it is taken as
// git takes it, without hashing it; one touched since, or changed, is
// hashed (and, changed, read from git).
func TestLazyReadsTrustGitsIndex(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	files := map[string]string{"a.txt": "alpha\n", "b.txt": "bravo\n", "c.txt": "charlie\n"}
	commitFiles(t, dir, files)
	// The files' times set well before the index is written again, so
	// that none is racily clean (a time at or after the index's makes
	// git, and the read, hash it whatever its stat says).
	past := time.Now().Add(-time.Hour)
	for p := range files {
		if err := os.Chtimes(filepath.Join(dir, p), past, past); err != nil {
			t.Fatal(err)
		}
	}
	run(t, dir, nil, nil, "update-index", "--refresh")
	tgt, err := targets.OpenLocal(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	sb := newSandbox(t, tgt)
	sb.pull(t, tgt, "refs/heads/main")
	now := time.Now()
	if err := os.Chtimes(filepath.Join(dir, "b.txt"), now, now); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.txt"), []byte("CHARLIE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		hashed int64
	}{{"a.txt", 0}, {"b.txt", 1}, {"c.txt", 2}} {
		got, err := sb.ws.ReadFile(c.path)
		if err != nil || string(got) != files[c.path] {
			t.Fatalf("%s: %q %v", c.path, got, err)
		}
		if n := targets.WorktreeHashes(tgt); n != c.hashed {
			t.Errorf("after reading %s, %d files were hashed; want %d", c.path, n, c.hashed)
		}
	}
}

// TestLazyReadOpensNoFIFOIndex: a working tree's .git/index, which a lazy
// read consults (in airlock's own process) to trust a checked-out file
// without hashing it, is a FIFO. The read neither waits for a writer nor
// takes what one writes: the index is not trusted, and the file is read
// as committed.
func TestLazyReadOpensNoFIFOIndex(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	commitFiles(t, dir, map[string]string{"a.txt": "alpha\n"})
	sb := pulled(t, dir, false)
	index := filepath.Join(dir, ".git", "index")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(index, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Wake a read that waits on the FIFO, so that it ends.
		if f, err := os.OpenFile(index, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	done := make(chan struct{})
	var got []byte
	var err error
	go func() {
		defer close(done)
		got, err = sb.ws.ReadFile("a.txt")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading a.txt waits on the FIFO that is the working tree's index")
	}
	if err != nil || string(got) != "alpha\n" {
		t.Errorf("a.txt: %q %v; want the committed content", got, err)
	}
}

// TestOpenWaitsOnNoFIFO: a working-tree target whose git directory holds
// a FIFO as its HEAD or config is refused, at once, saying which;
// airlock's own reads (the layout probe, go-git) and git's would
// otherwise wait for a writer forever.
func TestOpenWaitsOnNoFIFO(t *testing.T) {
	for _, name := range []string{"HEAD", "config"} {
		t.Run(name, func(t *testing.T) {
			wt := t.TempDir()
			run(t, wt, nil, nil, "init", "-q", "-b", "main", ".")
			commitFiles(t, wt, map[string]string{"a.txt": "a\n"})
			p := filepath.Join(wt, ".git", name)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				// Wake whatever waits on the FIFO, so that it ends.
				for i := 0; i < 20; i++ {
					if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				}
			})
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				tgt, err := targets.OpenLocal(ctx, wt)
				if err == nil {
					_, err = tgt.Fetch(ctx, "refs/heads/main", nil, newSandbox(t, tgt).store)
					tgt.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, gitdir.ErrSpecialFile) {
					t.Errorf("opening a repository whose %s is a FIFO: %v; want %v", name, err, gitdir.ErrSpecialFile)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("opening and pulling from a repository whose %s is a FIFO waits on it", name)
			}
		})
	}
}
