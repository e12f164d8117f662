package memfs_test

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/airlock-dev/airlock/memfs"
)

func TestIOFSConformance(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "README.md", "# hello\n")
	mustWrite(t, w, "src/main.go", "package main\n")
	mustWrite(t, w, "src/util/strings.go", "package util\n")
	mustWrite(t, w, "bin/run.sh", "#!/bin/sh\n")
	if err := w.Chmod("bin/run.sh", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.MkdirAll("empty/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.Symlink("../README.md", "docs/readme-link"); err != nil {
		t.Fatal(err)
	}
	if err := w.Symlink("src", "srclink"); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(w.FS(), "README.md", "src/main.go", "src/util/strings.go", "bin/run.sh", "empty/dir", "docs/readme-link", "srclink"); err != nil {
		t.Fatal(err)
	}
}

func TestIOFSRefusesInvalidPaths(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "a.txt", "x")
	for _, name := range []string{"/a.txt", "./a.txt", "a.txt/", "../a.txt", ""} {
		if _, err := w.FS().Open(name); err == nil {
			t.Errorf("Open(%q) succeeded", name)
		}
	}
	if _, err := fs.ReadFile(w.FS(), ".git/config"); err == nil {
		t.Error("reading .git/config succeeded")
	}
}

func newWorkspace(t testing.TB, opts ...memfs.Option) *memfs.Workspace {
	t.Helper()
	w, err := memfs.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func mustWrite(t testing.TB, w *memfs.Workspace, name, content string) {
	t.Helper()
	if err := w.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
