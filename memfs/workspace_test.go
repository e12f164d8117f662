package memfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/memfs"
)

func TestCreateUnderFileIsENOTDIR(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "f", "x")
	b := w.Billy()
	checks := map[string]error{
		"WriteFile":      w.WriteFile("f/child", []byte("y"), 0),
		"MkdirAll":       w.MkdirAll("f/sub", 0o755),
		"Symlink":        w.Symlink("../g", "f/link"),
		"billy Create":   errOf(b.Create("f/child")),
		"billy MkdirAll": b.MkdirAll("f/sub/deeper", 0o755),
		"billy deeper":   errOf(b.Create("f/a/b/c")),
	}
	for name, err := range checks {
		if !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("%s under a file: %v, want ENOTDIR", name, err)
		}
	}
	if got, _ := w.ReadFile("f"); string(got) != "x" {
		t.Errorf("f = %q", got)
	}
}

func errOf[T any](_ T, err error) error { return err }

// go-billy's memfs Rename matches by string prefix and drags siblings such
// as "foobar.txt" along with "foo". Ours touches only what it names.
func TestRenameLeavesSiblingsAlone(t *testing.T) {
	for _, view := range []string{"worker", "billy"} {
		t.Run(view, func(t *testing.T) {
			w := newWorkspace(t)
			files := map[string]string{
				"foo/a": "1", "foo/b/c": "2", "foobar.txt": "3", "foo.d/x": "4", "foo-bar/y": "5", "fo": "6", "foo0": "7",
			}
			for p, c := range files {
				mustWrite(t, w, p, c)
			}
			var err error
			if view == "worker" {
				err = w.Rename("foo", "moved")
			} else {
				err = w.Billy().Rename("foo", "moved")
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"moved/a": "1", "moved/b/c": "2", "foobar.txt": "3", "foo.d/x": "4", "foo-bar/y": "5", "fo": "6", "foo0": "7",
			}
			if got := dumpFiles(t, w); !equalMaps(got, want) {
				t.Errorf("after rename: %v, want %v", got, want)
			}
		})
	}
}

func TestRenameSemantics(t *testing.T) {
	type setup func(w *memfs.Workspace)
	files := func(ps ...string) setup {
		return func(w *memfs.Workspace) {
			for _, p := range ps {
				mustWrite(t, w, p, p)
			}
		}
	}
	cases := []struct {
		name     string
		setup    setup
		from, to string
		err      error
		check    map[string]string // path -> content after (file) or "" absent
	}{
		{"file over file replaces", files("a", "b"), "a", "b", nil, map[string]string{"b": "a", "a": ""}},
		{"into new directories", files("a"), "a", "x/y/z", nil, map[string]string{"x/y/z": "a"}},
		{"dir over empty dir", func(w *memfs.Workspace) { files("d/f")(w); w.MkdirAll("e", 0o755) }, "d", "e", nil, map[string]string{"e/f": "d/f"}},
		{"dir over non-empty dir", files("d/f", "e/g"), "d", "e", syscall.ENOTEMPTY, map[string]string{"d/f": "d/f", "e/g": "e/g"}},
		{"file over dir", files("a", "e/g"), "a", "e", syscall.EISDIR, map[string]string{"a": "a"}},
		{"dir over file", files("d/f", "a"), "d", "a", syscall.ENOTDIR, map[string]string{"a": "a"}},
		{"dir into itself", files("d/f"), "d", "d/sub", syscall.EINVAL, map[string]string{"d/f": "d/f"}},
		{"to itself", files("a"), "a", "a", nil, map[string]string{"a": "a"}},
		{"missing source", files("a"), "nope", "b", fs.ErrNotExist, map[string]string{"a": "a"}},
		{"under a file", files("a", "b"), "a", "b/c", syscall.ENOTDIR, map[string]string{"a": "a", "b": "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorkspace(t)
			c.setup(w)
			err := w.Rename(c.from, c.to)
			if c.err == nil && err != nil || c.err != nil && !errors.Is(err, c.err) {
				t.Fatalf("Rename(%q, %q) = %v, want %v", c.from, c.to, err, c.err)
			}
			for p, want := range c.check {
				got, err := w.ReadFile(p)
				if want == "" {
					if err == nil {
						t.Errorf("%s still exists", p)
					}
					continue
				}
				if err != nil || string(got) != want {
					t.Errorf("%s = %q, %v; want %q", p, got, err, want)
				}
			}
		})
	}
}

func TestRenameMovesSymlinkItself(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "target.txt", "t")
	if err := w.Symlink("target.txt", "link"); err != nil {
		t.Fatal(err)
	}
	if err := w.Rename("link", "link2"); err != nil {
		t.Fatal(err)
	}
	if got, err := w.Readlink("link2"); err != nil || got != "target.txt" {
		t.Errorf("Readlink(link2) = %q, %v", got, err)
	}
	if _, err := w.ReadFile("target.txt"); err != nil {
		t.Error(err)
	}
}

func TestRemove(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "d/f", "x")
	mustWrite(t, w, "t.txt", "t")
	if err := w.Symlink("t.txt", "l"); err != nil {
		t.Fatal(err)
	}
	if err := w.Remove("d"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("Remove(non-empty dir) = %v", err)
	}
	if err := w.Remove("l"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ReadFile("t.txt"); err != nil {
		t.Errorf("removing a link removed its target: %v", err)
	}
	if err := w.RemoveAll("d"); err != nil {
		t.Fatal(err)
	}
	if err := w.RemoveAll("d"); err != nil {
		t.Errorf("RemoveAll of a missing path: %v", err)
	}
	if err := w.Remove("gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove(missing) = %v", err)
	}
	if err := w.Billy().Remove("/"); err == nil {
		t.Error("removing the root succeeded")
	}
}

func TestReadDirAndStat(t *testing.T) {
	w := newWorkspace(t)
	for _, p := range []string{"b.txt", "a.txt", "dir/x", "C.md"} {
		mustWrite(t, w, p, p)
	}
	if err := w.Symlink("a.txt", "link"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".", "dir/", "dir"} {
		if _, err := w.ReadDir(name); err != nil {
			t.Errorf("ReadDir(%q): %v", name, err)
		}
	}
	ents, _ := w.ReadDir(".")
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !sort.StringsAreSorted(names) || len(names) != 5 {
		t.Errorf("ReadDir(.) = %v", names)
	}
	if fi, err := w.Stat("link"); err != nil || fi.Mode()&fs.ModeSymlink != 0 || fi.Size() != 5 || fi.Name() != "link" {
		t.Errorf("Stat(link) = %v, %v", fi, err)
	}
	if fi, err := w.Lstat("link"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(link) = %v, %v", fi, err)
	}
	if _, err := w.ReadDir("a.txt"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("ReadDir(file) = %v", err)
	}
	if err := w.Chmod("a.txt", 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, _ := w.Stat("a.txt"); fi.Mode() != 0o755 {
		t.Errorf("mode after chmod = %v", fi.Mode())
	}
}

func TestOpenFileFlags(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "f", "abc")
	if _, err := w.OpenFile("f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL on existing: %v", err)
	}
	f, err := w.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("de"))
	f.Close()
	if got, _ := w.ReadFile("f"); string(got) != "abcde" {
		t.Errorf("after append: %q", got)
	}
	r, _ := w.OpenFile("f", os.O_RDONLY, 0)
	if _, err := r.Write([]byte("x")); err == nil {
		t.Error("write through a read-only handle succeeded")
	}
	if err := w.Remove("f"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); !errors.Is(err, memfs.ErrStale) {
		t.Errorf("read after remove: %v, want ErrStale", err)
	}
	if _, err := w.OpenFile("dir-not-file", os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("open missing: %v", err)
	}
}

func TestEditIsAtomic(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "counter", "0")
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.Edit("counter", func(b []byte) ([]byte, error) {
				n, _ := strconv.Atoi(string(b))
				return []byte(strconv.Itoa(n + 1)), nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got, _ := w.ReadFile("counter"); string(got) != "50" {
		t.Errorf("counter = %s after 50 concurrent edits", got)
	}
	boom := errors.New("boom")
	if err := w.Edit("counter", func([]byte) ([]byte, error) { return []byte("x"), boom }); err != boom {
		t.Errorf("Edit error = %v", err)
	}
	if got, _ := w.ReadFile("counter"); string(got) != "50" {
		t.Errorf("a failed edit changed the file: %s", got)
	}
}

// dumpFiles reads every file in the workspace through the billy view, which
// lists everything.
func dumpFiles(t testing.TB, w *memfs.Workspace) map[string]string {
	t.Helper()
	out := map[string]string{}
	for p, e := range dumpTree(t, w) {
		if e.mode.IsRegular() {
			out[p] = e.data
		}
	}
	return out
}

type entry struct {
	mode fs.FileMode
	data string // content or symlink target
}

// dumpTree is the whole tree: every file, symlink and directory with its
// mode and content, read through the billy view.
func dumpTree(t testing.TB, w *memfs.Workspace) map[string]entry {
	t.Helper()
	b := w.Billy()
	out := map[string]entry{}
	var walk func(dir string)
	walk = func(dir string) {
		infos, err := b.ReadDir(dir)
		if err != nil {
			t.Fatalf("ReadDir(%q): %v", dir, err)
		}
		for _, fi := range infos {
			p := fi.Name()
			if dir != "" {
				p = dir + "/" + p
			}
			switch {
			case fi.IsDir():
				out[p] = entry{mode: fi.Mode()}
				walk(p)
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := b.Readlink(p)
				if err != nil {
					t.Fatal(err)
				}
				out[p] = entry{mode: fi.Mode(), data: target}
			default:
				f, err := b.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				data, err := io.ReadAll(f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				out[p] = entry{mode: fi.Mode(), data: string(data)}
			}
		}
	}
	walk("")
	return out
}

func equalMaps[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
