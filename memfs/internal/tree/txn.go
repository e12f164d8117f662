package tree

import (
	"bytes"
	"io/fs"
	"sync/atomic"
	"syscall"
	"time"
)

// Txn builds the next version of the live tree. Nothing it does is visible
// until memfs commits it, and that commit checks quotas before it publishes anything: an
// operation refused for any reason leaves the workspace exactly as it was.
//
// Directories are path-copied from the root; a directory version the
// transaction made itself is changed in place (it is not visible yet), so a
// transaction of many changes copies each directory once.
type Txn struct {
	Inos  *atomic.Uint64 // where identities of new versions come from
	ID    uint64         // marks the nodes this transaction made (Node.Txn)
	Gen   uint64         // the generation of the nodes it makes
	Root  *Node
	U     Tally
	Dirty []string
	Now   time.Time
}

// Owns reports whether n is a version this transaction made (and so may
// change in place).
func (t *Txn) Owns(n *Node) bool { return n.Txn == t.ID }

// NewNode makes a node of the current generation; it is accounted when it
// is linked into the tree (see Added).
func (t *Txn) NewNode(k Kind, perm fs.FileMode, data []byte) *Node {
	n := &Node{Kind: k, Perm: perm.Perm(), Mtime: t.Now, Ino: t.Inos.Add(1), Gen: t.Gen, Txn: t.ID, Data: data}
	if k == KindDir {
		n.Kids = EmptyKids
	}
	return n
}

// ReplaceData makes a new version of a file or symlink with data (which
// the caller hands over), keeping its identity and mode.
func (t *Txn) ReplaceData(old *Node, data []byte) *Node {
	n := *old
	n.Gen, n.Txn, n.Data, n.Mtime, n.OID, n.Lazy = t.Gen, t.ID, data, t.Now, [20]byte{}, nil
	return &n
}

// Version makes a new Version of a file or symlink with the same content.
// The content is copied when old is frozen: a Version of the current
// generation may later be written in place, and a frozen one never may.
func (t *Txn) Version(old *Node) *Node {
	if old.Lazy != nil {
		// Lazy content is never changed in place: share it, id and all.
		n := *old
		n.Gen, n.Txn, n.Mtime = t.Gen, t.ID, t.Now
		return &n
	}
	data := old.Data
	if old.Gen != t.Gen {
		data = bytes.Clone(data)
	}
	return t.ReplaceData(old, data)
}

// Added accounts a subtree that is new to the workspace.
func (t *Txn) Added(n *Node) {
	c := SubtreeCost(n, 0, false)
	t.U.Live.Add(c)
	t.U.Held.Add(c)
}

// Dropped accounts a subtree that leaves the live tree. Frozen versions in
// it stay held by the base or a checkpoint.
func (t *Txn) Dropped(n *Node) {
	t.U.Live.Sub(SubtreeCost(n, 0, false))
	t.U.Held.Sub(SubtreeCost(n, t.Gen, true))
}

// MarkFiles records every file and symlink at or below n, at path p, as
// possibly changed.
func (t *Txn) MarkFiles(p string, n *Node) {
	if n.Kind != KindDir {
		t.Dirty = append(t.Dirty, p)
		return
	}
	WalkFiles(n, p, func(path string, _ *Node) { t.Dirty = append(t.Dirty, path) })
}

// Put links n at comps, making missing parents when mkdirs is set, and
// returns the node it replaced. n nil removes the entry. The caller does
// the accounting of n and of what it replaced.
func (t *Txn) Put(comps []string, n *Node, mkdirs bool) (old *Node, err error) {
	root, old, err := t.putIn(t.Root, comps, n, mkdirs, true)
	if err != nil {
		return nil, err
	}
	t.Root = root
	return old, nil
}

func (t *Txn) putIn(dir *Node, comps []string, n *Node, mkdirs, isRoot bool) (*Node, *Node, error) {
	name := comps[0]
	child := dir.Child(name)
	var next, old *Node
	if len(comps) == 1 {
		if child == nil && n == nil {
			return nil, nil, fs.ErrNotExist
		}
		next, old = n, child
	} else {
		switch {
		case child == nil && !mkdirs:
			return nil, nil, fs.ErrNotExist
		case child == nil:
			child = t.NewNode(KindDir, 0o755, nil)
			t.Added(child)
		case child.Kind != KindDir:
			return nil, nil, syscall.ENOTDIR
		}
		var err error
		next, old, err = t.putIn(child, comps[1:], n, mkdirs, false)
		if err != nil {
			return nil, nil, err
		}
	}
	d := t.CopyDir(dir, isRoot)
	if next == nil {
		d.Kids = d.Kids.Delete(name)
	} else {
		d.Kids = d.Kids.Set(name, next)
	}
	return d, old, nil
}

// CopyDir returns a version of dir this transaction may change.
func (t *Txn) CopyDir(dir *Node, isRoot bool) *Node {
	if t.Owns(dir) {
		dir.Mtime = t.Now
		return dir
	}
	c := *dir
	c.Gen, c.Txn, c.Mtime = t.Gen, t.ID, t.Now
	if !isRoot && dir.Gen != t.Gen {
		t.U.Held.Dirs++ // the old version stays with a checkpoint or the base
	}
	return &c
}

// PruneEmpty removes the directory at comps and its parents while empty.
func (t *Txn) PruneEmpty(comps []string) {
	for len(comps) > 0 {
		n := Lookup(t.Root, comps)
		if n == nil || n.Kind != KindDir || n.Kids.Len() > 0 {
			return
		}
		if _, err := t.Put(comps, nil, false); err != nil {
			return
		}
		comps = comps[:len(comps)-1]
	}
}

// Tally keeps two tallies: the live tree, and everything held in memory,
// which adds versions that only the base or a checkpoint still reaches.
// Quotas apply to the held tally: that is what the process pays for.
type Tally struct {
	Live Usage
	Held Usage
}
