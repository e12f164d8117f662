package memfs_test

import (
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/memfs"
)

func TestCheckpointStack(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "f", "0")
	for _, name := range []string{"A", "B", "C"} {
		if _, err := w.Checkpoint(name); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, w, "f", name)
	}
	if _, err := w.Rollback("B"); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.ReadFile("f"); string(got) != "A" {
		t.Errorf("after rollback to B: f = %q", got)
	}
	if names := checkpointNames(w); !reflect.DeepEqual(names, []string{"A", "B"}) {
		t.Errorf("checkpoints after rollback to B: %v", names)
	}
	mustWrite(t, w, "f", "later")
	if info, err := w.Rollback(""); err != nil || info.Name != "B" {
		t.Errorf("Rollback(\"\") = %v, %v", info, err)
	}
	if got, _ := w.ReadFile("f"); string(got) != "A" {
		t.Errorf("rolling back to B twice: f = %q", got)
	}
	_, err := w.Rollback("C")
	if !errors.Is(err, memfs.ErrNoCheckpoint) || !strings.Contains(err.Error(), `"A", "B"`) {
		t.Errorf("rollback to a dropped checkpoint: %v", err)
	}
}

func checkpointNames(w *memfs.Workspace) []string {
	var out []string
	for _, cp := range w.Checkpoints() {
		out = append(out, cp.Name)
	}
	return out
}

func TestCheckpointNames(t *testing.T) {
	w := newWorkspace(t)
	if _, err := w.Rollback(""); !errors.Is(err, memfs.ErrNoCheckpoint) {
		t.Errorf("rollback with none: %v", err)
	}
	a, _ := w.Checkpoint("")
	b, _ := w.Checkpoint("")
	if a.Name != "checkpoint-1" || b.Name != "checkpoint-2" {
		t.Errorf("automatic names %q, %q", a.Name, b.Name)
	}
	if _, err := w.Checkpoint("checkpoint-1"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate name: %v", err)
	}
	for _, bad := range []string{"a\nb", " pad", strings.Repeat("x", 101), "rtl\u202e"} {
		if _, err := w.Checkpoint(bad); err == nil {
			t.Errorf("checkpoint name %q accepted", bad)
		}
	}
}

func TestCheckpointsReportChanges(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "a", "1")
	w.Checkpoint("first")
	mustWrite(t, w, "b", "2")
	mustWrite(t, w, "a", "changed")
	w.Checkpoint("second")
	w.Remove("b")
	got := w.Checkpoints()
	if got[0].Changed != 1 || got[1].Changed != 1 { // a changed since first (b created then removed); b removed since second
		t.Errorf("changed counts: %+v", got)
	}
	mustWrite(t, w, "a", "1")
	if got := w.Checkpoints(); got[0].Changed != 0 {
		t.Errorf("back to the first state, %d changes reported", got[0].Changed)
	}
}

// Rollback after a mix of every kind of change restores a byte-identical
// tree: contents, modes, symlinks, directories, and change tracking.
func TestRollbackRestoresEverything(t *testing.T) {
	w := newWorkspace(t)
	_, err := w.Seed([]memfs.SeedFile{
		{Path: "src/main.go", Mode: 0o644, Data: []byte("package main\n")},
		{Path: "src/util/u.go", Mode: 0o644, Data: []byte("package util\n")},
		{Path: "run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
		{Path: "docs/readme", Mode: fs.ModeSymlink, Data: []byte("../src/main.go")},
		{Path: "data/big.bin", Mode: 0o644, Data: make([]byte, 100_000)},
	})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w, "pre.txt", "made before the checkpoint")
	w.MkdirAll("empty", 0o700)
	before := dumpTree(t, w)
	changesBefore := w.Changes()
	if _, err := w.Checkpoint("cp"); err != nil {
		t.Fatal(err)
	}

	mustWrite(t, w, "src/main.go", "package main // edited\n")
	mustWrite(t, w, "new/deep/file.txt", "new")
	must(t, w.Remove("run.sh"))
	must(t, w.Rename("src/util", "lib/util"))
	must(t, w.Chmod("src/main.go", 0o755))
	must(t, w.Remove("docs/readme"))
	must(t, w.Symlink("../lib/util/u.go", "docs/readme"))
	must(t, w.Symlink("pre.txt", "alias"))
	must(t, w.RemoveAll("empty"))
	must(t, w.MkdirAll("other/dir", 0o755))
	f, err := w.OpenFile("data/big.bin", os.O_RDWR, 0)
	must(t, err)
	f.WriteAt([]byte("overwritten in place"), 5000)
	f.Truncate(50_000)
	f.Close()
	g, err := w.OpenFile("pre.txt", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	g.Write([]byte(" and appended after"))
	g.Close()
	must(t, w.Edit("pre.txt", func(b []byte) ([]byte, error) { return append(b, '!'), nil }))

	if _, err := w.Rollback("cp"); err != nil {
		t.Fatal(err)
	}
	after := dumpTree(t, w)
	if !reflect.DeepEqual(before, after) {
		for p := range mergeKeys(before, after) {
			if before[p] != after[p] {
				t.Errorf("%s: before %+v, after rollback %+v", p, short(before[p]), short(after[p]))
			}
		}
	}
	if got := w.Changes(); !reflect.DeepEqual(got, changesBefore) {
		t.Errorf("changes after rollback %v, want %v", got, changesBefore)
	}
	checkAccounting(t, w, true)
}

// A checkpoint is copy-on-write: taking one copies nothing, and what it
// costs afterwards is what changes.
func TestCheckpointIsCopyOnWrite(t *testing.T) {
	w := seeded(t, 1000, 2048)
	_, held0 := w.Usage()
	if _, err := w.Checkpoint("cp"); err != nil {
		t.Fatal(err)
	}
	if _, held := w.Usage(); held != held0 {
		t.Errorf("taking a checkpoint grew usage from %+v to %+v", held0, held)
	}
	mustWrite(t, w, "d05/f00005.txt", "small edit")
	_, held := w.Usage()
	if grew := held.Bytes - held0.Bytes; grew != int64(len("small edit")) {
		t.Errorf("one edit after the checkpoint costs %d bytes", grew)
	}
	if grew := held.Dirs - held0.Dirs; grew != 1 { // one directory version: d05's
		t.Errorf("one edit after the checkpoint copies %d directories", grew)
	}
	checkAccounting(t, w, true)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mergeKeys[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func short(e entry) entry {
	if len(e.data) > 40 {
		e.data = e.data[:40] + "..."
	}
	return e
}
