package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

const (
	obj    byte = 1
	commit byte = 2
)

func isCommit(t byte) bool { return t == commit }

type rec struct {
	typ     byte
	payload string
}

func readAll(t *testing.T, path string) ([]rec, *Journal) {
	t.Helper()
	var got []rec
	j, err := Open(path, isCommit, func(typ byte, p []byte) error {
		got = append(got, rec{typ, string(p)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, j
}

// TestTornTail cuts the journal at every byte of its last batch (as a
// crash in the middle of a write would) and flips every byte of it (as a
// damaged sector would): Open returns exactly the batches before it, and
// the next batch appends after them.
func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	j, err := Open(path, isCommit, func(byte, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	var want []rec
	for i := 0; i < 3; i++ {
		var b Batch
		b.Add(obj, []byte(fmt.Sprintf("object %d", i)))
		b.Add(commit, []byte(fmt.Sprintf("state %d", i)))
		want = append(want, rec{obj, fmt.Sprintf("object %d", i)}, rec{commit, fmt.Sprintf("state %d", i)})
		if err := j.Write(&b); err != nil {
			t.Fatal(err)
		}
	}
	good := j.Size()
	var last Batch
	last.Add(obj, bytes.Repeat([]byte("x"), 100))
	last.Add(commit, []byte("state 3"))
	if err := j.Write(&last); err != nil {
		t.Fatal(err)
	}
	j.Close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, data []byte) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "j")
		os.WriteFile(p, data, 0o600)
		got, j := readAll(t, p)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		if j.Size() != good {
			t.Fatalf("size %d after recovery, want %d", j.Size(), good)
		}
		var b Batch
		b.Add(commit, []byte("after"))
		if err := j.Write(&b); err != nil {
			t.Fatal(err)
		}
		j.Close()
		got, j = readAll(t, p)
		j.Close()
		if len(got) != len(want)+1 || got[len(got)-1] != (rec{commit, "after"}) {
			t.Fatalf("after a new batch: %v", got)
		}
	}
	for cut := good; cut < int64(len(whole)); cut++ {
		check(t, whole[:cut])
	}
	for i := good; i < int64(len(whole)); i++ {
		data := bytes.Clone(whole)
		data[i] ^= 0x40
		check(t, data)
	}
	// The whole file reads whole.
	got, j2 := readAll(t, path)
	j2.Close()
	if len(got) != len(want)+2 {
		t.Fatalf("whole journal: %d records, want %d", len(got), len(want)+2)
	}
}

// TestObjectsAfterLastCommitAreDropped: records of a batch whose commit
// record never made it are not returned.
func TestObjectsAfterLastCommitAreDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := Open(path, isCommit, func(byte, []byte) error { return nil })
	var b Batch
	b.Add(commit, []byte("s"))
	b.Add(obj, []byte("orphan"))
	j.Write(&b)
	j.Close()
	got, j := readAll(t, path)
	defer j.Close()
	if fmt.Sprint(got) != fmt.Sprint([]rec{{commit, "s"}}) {
		t.Fatalf("got %v", got)
	}
}

func TestRewriteAndRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	j, _ := Open(path, isCommit, func(byte, []byte) error { return nil })
	for i := 0; i < 10; i++ {
		var b Batch
		b.Add(commit, []byte(fmt.Sprint(i)))
		j.Write(&b)
	}
	var b Batch
	b.Add(commit, []byte("compacted"))
	if err := j.Rewrite(&b); err != nil {
		t.Fatal(err)
	}
	var more Batch
	more.Add(commit, []byte("next"))
	j.Write(&more)
	j.Close()
	got, j := readAll(t, path)
	j.Close()
	if fmt.Sprint(got) != fmt.Sprint([]rec{{commit, "compacted"}, {commit, "next"}}) {
		t.Fatalf("got %v", got)
	}
	if _, err := os.Stat(path + ".new"); !os.IsNotExist(err) {
		t.Fatal("temporary file left behind")
	}
	other := filepath.Join(dir, "other")
	os.WriteFile(other, []byte("not a journal at all\n"), 0o600)
	if _, err := Open(other, isCommit, func(byte, []byte) error { return nil }); err == nil {
		t.Fatal("a file that is not a journal opened")
	}
}

// TestHereSeesTheFileGoOrChange: Here is nil while the journal's path
// names the file it writes, says when the file was removed or another put
// in its place, and is nil again after a rewrite; a link at the path is
// not opened.
func TestHereSeesTheFileGoOrChange(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	_, j := readAll(t, path)
	defer j.Close()
	rewrite := func() {
		t.Helper()
		if err := j.RewriteWith(func(r Records) error { r.Add(commit, []byte("whole")); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Here(); err != nil {
		t.Fatalf("fresh journal: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := j.Here(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removed: %v", err)
	}
	rewrite()
	if err := j.Here(); err != nil {
		t.Fatalf("after a rewrite: %v", err)
	}
	if err := os.WriteFile(path+".x", []byte("other"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".x", path); err != nil {
		t.Fatal(err)
	}
	if err := j.Here(); !errors.Is(err, ErrReplaced) {
		t.Fatalf("replaced: %v", err)
	}
	rewrite()
	if got, j2 := readAll(t, path); len(got) != 1 || got[0].payload != "whole" {
		t.Fatalf("after the rewrite the path holds %v", got)
	} else {
		j2.Close()
	}
	// A link where the journal or its rewrite's new file would be.
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, path+".new"); err != nil {
		t.Fatal(err)
	}
	rewrite()
	if data, _ := os.ReadFile(outside); len(data) != 0 {
		t.Fatalf("the rewrite wrote through a link: %q", data)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, isCommit, func(byte, []byte) error { return nil }); err == nil {
		t.Fatal("opened a journal through a link")
	}
}
