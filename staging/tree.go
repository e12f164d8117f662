package staging

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/staging/patch"
	"github.com/airlock-dev/airlock/staging/rawtree"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// EmptyTree is the hash of the tree with no entries.
var EmptyTree = patch.EmptyTree

// ErrConflict is returned when a change cannot be applied to the tree it
// is meant for: a file where the parent has a directory, or the reverse,
// without the other half of the change.
var ErrConflict = errors.New("conflicting change")

// edit is one change to a tree: the entry at path becomes (mode, hash), or
// goes away.
type edit struct {
	path   string
	remove bool
	mode   filemode.FileMode
	hash   plumbing.Hash
	// Set by editTree: the entry the path had in the base tree, if any.
	old object.TreeEntry
	had bool
}

type editNode struct {
	leaf *edit
	kids map[string]*editNode
}

// editTree returns the hash of the tree that is base (zero: the empty tree)
// with edits applied. Only the directories on the edited paths are read and
// written again; every other subtree is reused by hash. Directories left
// empty disappear, as git has no empty trees.
func editTree(s *Store, base plumbing.Hash, edits []edit) (plumbing.Hash, error) {
	root := &editNode{}
	for i := range edits {
		n := root
		for _, c := range strings.Split(edits[i].path, "/") {
			if n.kids == nil {
				n.kids = make(map[string]*editNode)
			}
			next := n.kids[c]
			if next == nil {
				next = &editNode{}
				n.kids[c] = next
			}
			n = next
		}
		n.leaf = &edits[i]
	}
	if base == EmptyTree {
		base = plumbing.ZeroHash
	}
	h, err := applyEdits(s, base, root, "")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if h.IsZero() {
		return s.Put(&object.Tree{})
	}
	return h, nil
}

// applyEdits returns the tree base with the edits under en applied, or
// ZeroHash when the result is empty. It works on the tree's bytes: the
// entries are indexed in place, found by binary search, and the new tree
// is the old bytes with the changed entries spliced in, so a directory of
// many entries costs one scan and one copy of its bytes (and hashing
// them), not a decoded entry per name.
func applyEdits(s *Store, base plumbing.Hash, en *editNode, prefix string) (plumbing.Hash, error) {
	var t rawtree.Index
	if !base.IsZero() {
		data, err := s.treeContent(base)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("reading tree %s at %q: %w", base, prefix, err)
		}
		if t, err = rawtree.Parse(data); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("reading tree %s at %q: %w", base, prefix, err)
		}
		defer t.Release()
	}
	names := make([]string, 0, len(en.kids))
	for name := range en.kids {
		names = append(names, name)
	}
	sort.Strings(names)
	// The changes: old entries dropped (by index) and entries put in.
	var drop []int
	var add []rawtree.Entry
	set := func(i int, e rawtree.Entry) {
		if i >= 0 {
			drop = append(drop, i)
		}
		add = append(add, e)
	}
	remove := func(i int) {
		if i >= 0 {
			drop = append(drop, i)
		}
	}
	for _, name := range names {
		child, p := en.kids[name], join(prefix, name)
		i := t.Find(name)
		var cur object.TreeEntry
		exists := i >= 0
		if exists {
			cur = object.TreeEntry{Name: name, Mode: t.Mode(i), Hash: t.Hash(i)}
		}
		isDir := exists && cur.Mode == filemode.Dir
		if len(child.kids) == 0 {
			l := child.leaf
			l.old, l.had = cur, exists && !isDir
			switch {
			case l.remove && isDir:
				return plumbing.ZeroHash, fmt.Errorf("%w: %s is a directory in the parent tree, not a file to remove", ErrConflict, p)
			case l.remove:
				remove(i)
			case isDir:
				return plumbing.ZeroHash, fmt.Errorf("%w: %s is a directory in the parent tree; remove the files under it in the same change to put a file there", ErrConflict, p)
			default:
				set(i, rawtree.Entry{Name: name, Mode: l.mode, Hash: l.hash})
			}
			continue
		}
		// Edits under name: name is (or becomes) a directory, unless a
		// file replaces the directory in this same change.
		var sub plumbing.Hash
		switch {
		case isDir:
			sub = cur.Hash
		case exists && child.leaf == nil:
			return plumbing.ZeroHash, fmt.Errorf("%w: %s is a file in the parent tree; remove it in the same change to put files under it", ErrConflict, p)
		}
		if l := child.leaf; l != nil {
			// A file removed for a directory, or a directory removed for a
			// file: the leaf's side of the change is recorded here.
			l.old, l.had = cur, exists && !isDir
		}
		h, err := applyEdits(s, sub, child, p)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch l := child.leaf; {
		case l != nil && !l.remove && !h.IsZero():
			return plumbing.ZeroHash, fmt.Errorf("%w: %s would be both a file and a directory: files under it stay in the parent tree; remove them in the same change", ErrConflict, p)
		case l != nil && !l.remove:
			set(i, rawtree.Entry{Name: name, Mode: l.mode, Hash: l.hash})
		case h.IsZero():
			remove(i)
		default:
			set(i, rawtree.Entry{Name: name, Mode: filemode.Dir, Hash: h})
		}
	}
	if t.Len()-len(drop)+len(add) == 0 {
		return plumbing.ZeroHash, nil
	}
	sort.Ints(drop)
	return s.PutRaw(plumbing.TreeObject, t.Splice(drop, add))
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}

// TreeEntry is a file, symlink or submodule of a tree, with its full path.
type TreeEntry struct {
	Path string
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// walkTree calls fn for every non-directory entry under the tree h, in
// path order.
func walkTree(s *Store, h plumbing.Hash, prefix string, fn func(TreeEntry) error) error {
	if h.IsZero() || h == EmptyTree {
		return nil
	}
	t, err := object.GetTree(s, h)
	if err != nil {
		return fmt.Errorf("reading tree %s at %q: %w", h, prefix, err)
	}
	for _, e := range t.Entries {
		p := join(prefix, e.Name)
		if e.Mode == filemode.Dir {
			err = walkTree(s, e.Hash, p, fn)
		} else {
			err = fn(TreeEntry{Path: p, Mode: e.Mode, Hash: e.Hash})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// DiffTrees lists the files, symlinks and submodules that differ from tree
// a to tree b (zero hashes: the empty tree), sorted by path, as
// patch.Trees does.
func (s *Store) DiffTrees(a, b plumbing.Hash) ([]TreeChange, error) { return patch.Trees(s, a, b) }
