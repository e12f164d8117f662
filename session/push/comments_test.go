package push_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/session/push"
	"github.com/airlock-dev/airlock/staging"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// tree puts files (path: content, one level of directories) in store and
// returns their tree.
func tree(t *testing.T, store *staging.Store, files map[string]string) plumbing.Hash {
	t.Helper()
	dirs := map[string]map[string]string{"": {}}
	for p, c := range files {
		dir, name := "", p
		if i := strings.LastIndex(p, "/"); i >= 0 {
			dir, name = p[:i], p[i+1:]
		}
		if dirs[dir] == nil {
			dirs[dir] = map[string]string{}
		}
		dirs[dir][name] = c
	}
	put := func(entries []object.TreeEntry) plumbing.Hash {
		tr := &object.Tree{Entries: entries}
		obj := store.NewEncodedObject()
		if err := tr.Encode(obj); err != nil {
			t.Fatal(err)
		}
		h, err := store.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	entries := func(files map[string]string) []object.TreeEntry {
		var out []object.TreeEntry
		for name, c := range files {
			h, err := store.PutBlob([]byte(c))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
		}
		return out
	}
	root := entries(dirs[""])
	for dir, files := range dirs {
		if dir != "" {
			root = append(root, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: put(entries(files))})
		}
	}
	// git's order: by name, a directory as if its name ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	for i := range root {
		for j := i + 1; j < len(root); j++ {
			if key(root[j]) < key(root[i]) {
				root[i], root[j] = root[j], root[i]
			}
		}
	}
	return put(root)
}

// The words a worker reads for each kind of comment: general first, then
// by file and line; a line at the top, at the end, past the end, on a
// binary file, on a file the push does not have, on a whole file, a long
// line cut, a remark of several lines.
func TestRenderComments(t *testing.T) {
	store := staging.NewStore(0)
	var lines []string
	for i := 1; i <= 20; i++ {
		lines = append(lines, "line "+strings.Repeat("x", i%3))
	}
	root := tree(t, store, map[string]string{
		"src/main.go": strings.Join(lines, "\n") + "\n",
		"logo.png":    "\x89PNG\r\n\x00\x00",
		"wide.txt":    "short\n" + strings.Repeat("é", 300) + "\nend\n",
		"crlf.txt":    "a\r\nb\r\n",
	})
	comments := []approval.Comment{
		{Path: "src/main.go", Line: 20, Text: "the last line"},
		{Path: "src/main.go", Line: 1, Text: "the first line"},
		{Text: "general: add tests"},
		{Path: "logo.png", Line: 1, Text: "binary"},
		{Path: "gone.txt", Line: 3, Text: "not in the push"},
		{Path: "src/main.go", Line: 21, Text: "past the end"},
		{Path: "wide.txt", Line: 2, Text: "too wide"},
		{Path: "crlf.txt", Line: 2, Text: "carriage returns"},
		{Path: "src/main.go", Text: "the whole file\nand a second line"},
		{Text: "general: and a second one"},
	}
	got := push.RenderComments(store, push.Sides{Tree: root}, approval.Reject, comments)
	path := filepath.Join("testdata", "comments.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if approved := push.RenderComments(store, push.Sides{Tree: root}, approval.Approve, comments[:1]); !strings.HasPrefix(approved, "The reviewer approved the push, with comments for your next change: 1 comment.") {
		t.Errorf("an approval's comments:\n%s", approved)
	}
	if gone := push.RenderComments(store, push.Sides{}, approval.Reject, comments[:1]); !strings.Contains(gone, "no longer in the sandbox") {
		t.Errorf("without the tree:\n%s", gone)
	}
}

// A comment on a deleted line is quoted from the base, the side it names;
// a range is quoted whole, each of its lines marked.
func TestRenderCommentsSidesAndRanges(t *testing.T) {
	store := staging.NewStore(0)
	oldTree := tree(t, store, map[string]string{"a.go": "one\ntwo\nthree\nfour\n"})
	newTree := tree(t, store, map[string]string{"a.go": "one\nthree\nfour\nfive\n"})
	base := &object.Commit{Author: object.Signature{Name: "t", Email: "t@example.com"}, Committer: object.Signature{Name: "t", Email: "t@example.com"}, Message: "base\n", TreeHash: oldTree}
	obj := store.NewEncodedObject()
	if err := base.Encode(obj); err != nil {
		t.Fatal(err)
	}
	baseID, err := store.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	got := push.RenderComments(store, push.Sides{Tree: newTree, Base: baseID}, approval.Reject, []approval.Comment{
		{Path: "a.go", Line: 2, Side: approval.SideOld, Text: "keep two"},
		{Path: "a.go", Line: 2, EndLine: 4, Text: "these three"},
	})
	for _, want := range []string{
		"a.go:2 (old side: as the file was before the push; the push deletes or changes it)\n   1 | one\n > 2 | two\n   3 | three",
		"a.go:2-4\n   1 | one\n > 2 | three\n > 3 | four\n > 4 | five\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the worker is not shown\n%s\nin:\n%s", want, got)
		}
	}
}
