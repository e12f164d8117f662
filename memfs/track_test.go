package memfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/memfs"
)

func TestSeed(t *testing.T) {
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxFileBytes: 100}))
	mustWrite(t, w, "old", "gone after seed")
	refused, err := w.Seed([]memfs.SeedFile{
		{Path: "README.md", Mode: 0o644, Data: []byte("# hi")},
		{Path: "bin/run", Mode: 0o755, Data: []byte("#!/bin/sh")},
		{Path: "docs/link", Mode: fs.ModeSymlink, Data: []byte("../README.md")},
		{Path: ".env", Mode: 0o644, Data: []byte("SECRET=1")},
		{Path: ".git/config", Mode: 0o644},
		{Path: "../escape", Mode: 0o644},
		{Path: "big", Mode: 0o644, Data: make([]byte, 101)},
		{Path: "README.md", Mode: 0o644, Data: []byte("dup")},
		{Path: "README.md/child", Mode: 0o644},
		{Path: "out", Mode: fs.ModeSymlink, Data: []byte("../../etc/passwd")},
		{Path: "abs", Mode: fs.ModeSymlink, Data: []byte("/etc/passwd")},
		{Path: "tokey", Mode: fs.ModeSymlink, Data: []byte("id_rsa")},
		{Path: "dot", Mode: fs.ModeSymlink, Data: []byte(".")},
		{Path: "via", Mode: fs.ModeSymlink, Data: []byte("dot/../x")}, // escapes only through another link
		{Path: "dev", Mode: fs.ModeDevice},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]error{
		".env": memfs.ErrDenied, ".git/config": memfs.ErrDenied, "../escape": memfs.ErrOutsideSandbox,
		"big": memfs.ErrQuotaExceeded, "README.md": fs.ErrExist, "README.md/child": syscall.ENOTDIR,
		"out": memfs.ErrOutsideSandbox, "abs": memfs.ErrOutsideSandbox, "tokey": memfs.ErrDenied,
		"via": memfs.ErrOutsideSandbox, "dev": nil,
	}
	if len(refused) != len(want) {
		t.Errorf("refused %d entries, want %d: %v", len(refused), len(want), refused)
	}
	for _, r := range refused {
		sentinel, ok := want[r.Path]
		if !ok || sentinel != nil && !errors.Is(r.Err, sentinel) {
			t.Errorf("refused %q: %v (want %v)", r.Path, r.Err, sentinel)
		}
	}
	if _, err := w.Stat("old"); !errors.Is(err, fs.ErrNotExist) {
		t.Error("Seed kept what was there before")
	}
	if got, _ := w.ReadFile("docs/link"); string(got) != "# hi" {
		t.Errorf("seeded link reads %q", got)
	}
	if fi, _ := w.Stat("bin/run"); fi.Mode() != 0o755 {
		t.Errorf("seeded mode %v", fi.Mode())
	}
	if ch := w.Changes(); len(ch) != 0 {
		t.Errorf("changes right after Seed: %v", ch)
	}
	checkAccounting(t, w, true)
}

func TestChanges(t *testing.T) {
	w := newWorkspace(t)
	_, err := w.Seed([]memfs.SeedFile{
		{Path: "keep.txt", Mode: 0o644, Data: []byte("same")},
		{Path: "edit.txt", Mode: 0o644, Data: []byte("v1")},
		{Path: "revert.txt", Mode: 0o644, Data: []byte("orig")},
		{Path: "gone.txt", Mode: 0o644, Data: []byte("bye")},
		{Path: "exec.sh", Mode: 0o644, Data: []byte("#!")},
		{Path: "type", Mode: 0o644, Data: []byte("keep.txt")},
		{Path: "dir/a", Mode: 0o644, Data: []byte("a")},
		{Path: "dir/b", Mode: 0o644, Data: []byte("b")},
		{Path: "mv-from", Mode: 0o644, Data: []byte("m")},
		{Path: "rewrite", Mode: 0o644, Data: []byte("same bytes")},
	})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w, "new.txt", "hello")
	mustWrite(t, w, "edit.txt", "v2")
	mustWrite(t, w, "revert.txt", "changed")
	mustWrite(t, w, "revert.txt", "orig")
	mustWrite(t, w, "rewrite", "same bytes")
	if err := w.Remove("gone.txt"); err != nil {
		t.Fatal(err)
	}
	if err := w.Chmod("exec.sh", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.Remove("type"); err != nil {
		t.Fatal(err)
	}
	if err := w.Symlink("keep.txt", "type"); err != nil {
		t.Fatal(err)
	}
	if err := w.RemoveAll("dir"); err != nil {
		t.Fatal(err)
	}
	if err := w.Rename("mv-from", "sub/mv-to"); err != nil {
		t.Fatal(err)
	}
	if err := w.MkdirAll("empty/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	got := w.Changes()
	want := []memfs.Change{
		{Path: "dir/a", Kind: change.Delete, Mode: 0o644, Size: 1},
		{Path: "dir/b", Kind: change.Delete, Mode: 0o644, Size: 1},
		{Path: "edit.txt", Kind: change.Update, Mode: 0o644, Size: 2},
		{Path: "exec.sh", Kind: change.Update, Mode: 0o755, Size: 2},
		{Path: "gone.txt", Kind: change.Delete, Mode: 0o644, Size: 3},
		{Path: "mv-from", Kind: change.Delete, Mode: 0o644, Size: 1},
		{Path: "new.txt", Kind: change.Create, Mode: 0o644, Size: 5},
		{Path: "sub/mv-to", Kind: change.Create, Mode: 0o644, Size: 1},
		{Path: "type", Kind: change.Update, Mode: fs.ModeSymlink | 0o777, Size: 8},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Changes:\n got %v\nwant %v", got, want)
	}
}

// Change tracking looks only at touched paths, however big the workspace.
func TestChangesLookOnlyAtTouchedPaths(t *testing.T) {
	w := seeded(t, 10_000, 2048)
	for i := 0; i < 10; i++ {
		mustWrite(t, w, fmt.Sprintf("d%02d/f%05d.txt", i, i*37), "edited")
	}
	if n := memfs.DirtyLen(w); n != 10 {
		t.Errorf("tracking looks at %d paths after 10 edits", n)
	}
	if n := len(w.Changes()); n != 10 {
		t.Errorf("%d changes after 10 edits", n)
	}
}

// seeded returns a workspace seeded with n files of size bytes, spread over
// 100 directories.
func seeded(t testing.TB, n, size int, opts ...memfs.Option) *memfs.Workspace {
	t.Helper()
	w := newWorkspace(t, opts...)
	files := make([]memfs.SeedFile, n)
	for i := range files {
		data := make([]byte, size)
		copy(data, fmt.Sprintf("file %d\n", i))
		files[i] = memfs.SeedFile{Path: fmt.Sprintf("d%02d/f%05d.txt", i%100, i), Mode: 0o644, Data: data}
	}
	refused, err := w.Seed(files)
	if err != nil || len(refused) > 0 {
		t.Fatal(err, refused)
	}
	return w
}

func TestHandleWritesAreTracked(t *testing.T) {
	w := newWorkspace(t)
	if _, err := w.Seed([]memfs.SeedFile{{Path: "f", Mode: 0o644, Data: []byte("abc")}}); err != nil {
		t.Fatal(err)
	}
	f, err := w.OpenFile("f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("X"), 1)
	f.Close()
	if ch := w.Changes(); len(ch) != 1 || ch[0].Kind != change.Update {
		t.Errorf("Changes = %v", ch)
	}
}
