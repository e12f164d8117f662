package patch

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/airlock-dev/airlock/internal/change"
)

// EmptyTree is the hash of the tree with no entries.
var EmptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

// Change is how one path differs between two trees.
type Change struct {
	Path    string
	Op      change.Kind
	OldMode filemode.FileMode // zero when created
	OldHash plumbing.Hash
	NewMode filemode.FileMode // zero when deleted
	NewHash plumbing.Hash
	// From is, for a Rename or Copy (Renames), the path it is made from
	// (the old side is that file), and Similarity how much of it the new
	// file keeps, in percent, as git's "similarity index" says.
	From       string
	Similarity int
}

// Source is where a diff reads trees and blobs (staging.Store is one).
type Source interface {
	storer.EncodedObjectStorer
	ReadBlob(h plumbing.Hash) ([]byte, error)
}

// Trees lists the files, symlinks and submodules that differ from tree a
// to tree b (zero hashes: the empty tree), sorted by path. Subtrees with
// the same hash are skipped, so two trees that share most of their content
// compare in time proportional to what differs.
func Trees(s storer.EncodedObjectStorer, a, b plumbing.Hash) ([]Change, error) {
	var out []Change
	if err := diffTrees(s, norm(a), norm(b), "", &out); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func norm(h plumbing.Hash) plumbing.Hash {
	if h == EmptyTree {
		return plumbing.ZeroHash
	}
	return h
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}

func treeEntries(s storer.EncodedObjectStorer, h plumbing.Hash) (map[string]object.TreeEntry, error) {
	out := map[string]object.TreeEntry{}
	if h.IsZero() {
		return out, nil
	}
	t, err := object.GetTree(s, h)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		out[e.Name] = e
	}
	return out, nil
}

func diffTrees(s storer.EncodedObjectStorer, a, b plumbing.Hash, prefix string, out *[]Change) error {
	if a == b {
		return nil
	}
	ae, err := treeEntries(s, a)
	if err != nil {
		return err
	}
	be, err := treeEntries(s, b)
	if err != nil {
		return err
	}
	for name, x := range ae {
		y, ok := be[name]
		if !ok {
			y = object.TreeEntry{}
		}
		if err := diffEntry(s, join(prefix, name), x, y, out); err != nil {
			return err
		}
	}
	for name, y := range be {
		if _, ok := ae[name]; !ok {
			if err := diffEntry(s, join(prefix, name), object.TreeEntry{}, y, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// diffEntry compares one name of two trees; a zero entry is absent.
func diffEntry(s storer.EncodedObjectStorer, p string, x, y object.TreeEntry, out *[]Change) error {
	xDir, yDir := x.Mode == filemode.Dir, y.Mode == filemode.Dir
	if x.Mode == y.Mode && x.Hash == y.Hash {
		return nil
	}
	var sub [2]plumbing.Hash
	if xDir {
		sub[0], x = x.Hash, object.TreeEntry{}
	}
	if yDir {
		sub[1], y = y.Hash, object.TreeEntry{}
	}
	if xDir || yDir {
		if err := diffTrees(s, sub[0], sub[1], p, out); err != nil {
			return err
		}
	}
	switch {
	case x.Mode == 0 && y.Mode == 0:
	case x.Mode == 0:
		*out = append(*out, Change{Path: p, Op: change.Create, NewMode: y.Mode, NewHash: y.Hash})
	case y.Mode == 0:
		*out = append(*out, Change{Path: p, Op: change.Delete, OldMode: x.Mode, OldHash: x.Hash})
	default:
		*out = append(*out, Change{Path: p, Op: change.Update, OldMode: x.Mode, OldHash: x.Hash, NewMode: y.Mode, NewHash: y.Hash})
	}
	return nil
}

// Each calls fn with each file patch from tree a to tree b, in path
// order, and stops at the first error fn returns. Nothing keeps a patch
// once fn returns: a diff of the whole of a large workspace (a new branch
// shows every file) holds one file's contents and hunks at a time, not
// all of them.
func Each(s Source, a, b plumbing.Hash, fn func(*FilePatch) error) error {
	return EachOf(s, a, b, nil, fn)
}

// EachOf is Each over only the paths keep accepts (all, when nil): the
// others' contents are never read, so a lazy file outside them is not
// fetched.
func EachOf(s Source, a, b plumbing.Hash, keep func(path string) bool, fn func(*FilePatch) error) error {
	changes, err := Trees(s, a, b)
	if err != nil {
		return err
	}
	if keep != nil {
		changes = slices.DeleteFunc(changes, func(c Change) bool { return !keep(c.Path) })
	}
	return eachChange(s, changes, fn)
}

// EachRenamed is Each with renames and copies found as git diff -M -C
// finds them (Renames, with git's default limit): a renamed file is one
// patch from its old path, its edits as hunks against the old content,
// not a deletion and a creation. What a reviewer is shown and picks from
// is this, so that both agree with git diff -M -C.
func EachRenamed(s Source, a, b plumbing.Hash, fn func(*FilePatch) error) error {
	return EachRenamedOf(s, a, b, nil, fn)
}

// EachRenamedOf is EachRenamed over only the paths keep accepts (all,
// when nil): renames are found among them, the others never read.
func EachRenamedOf(s Source, a, b plumbing.Hash, keep func(path string) bool, fn func(*FilePatch) error) error {
	changes, err := Trees(s, a, b)
	if err != nil {
		return err
	}
	if keep != nil {
		changes = slices.DeleteFunc(changes, func(c Change) bool { return !keep(c.Path) })
	}
	changes = Renames(changes, s.ReadBlob, 0)
	return eachChange(s, changes, fn)
}

func eachChange(s Source, changes []Change, fn func(*FilePatch) error) error {
	read := func(h plumbing.Hash, mode filemode.FileMode) ([]byte, error) {
		if h.IsZero() || mode == filemode.Submodule {
			return nil, nil
		}
		return s.ReadBlob(h)
	}
	for _, c := range changes {
		var why []string
		old, err := read(c.OldHash, c.OldMode)
		if err != nil {
			why = append(why, Unreadable(err))
		}
		new, err := read(c.NewHash, c.NewMode)
		if err != nil {
			why = append(why, Unreadable(err))
		}
		fps, err := New(c, old, new, strings.Join(why, "; "))
		if err != nil {
			return err
		}
		for _, f := range fps {
			if err := fn(f); err != nil {
				return err
			}
		}
	}
	return nil
}
