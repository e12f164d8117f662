package tree

import (
	"io/fs"
	"strings"
	"time"

	"github.com/benbjohnson/immutable"
)

// Kind is what a version is: a directory, a regular file or a symlink.
type Kind uint8

// The kinds of version.
const (
	KindDir Kind = iota
	KindFile
	KindSymlink
)

// Node is one version of a file, directory or symlink.
//
// Versions are shared between the live tree, the base and checkpoints. A
// version is frozen once its generation is older than the workspace's: from
// then on nothing changes it, so readers of a snapshot need no lock. Only a
// file version of the current generation is ever changed in place (by writes
// through an open handle); directories are never changed in place: every
// change path-copies from the root inside a transaction.
type Node struct {
	Kind  Kind
	Perm  fs.FileMode // permission bits only
	Mtime time.Time
	Ino   uint64 // identity of the file across versions
	Gen   uint64 // generation this version was made in
	Txn   uint64 // transaction that made it; that transaction may change it in place
	Data  []byte // file content or symlink target
	Kids  *immutable.SortedMap[string, *Node]
	// OID is the git blob id of data when the caller that made the
	// version knew it (a seed from a tree, a restore); zero when unknown.
	// Anything that changes data clears it.
	OID [20]byte
	// Lazy is set on a lazy version (see lazy.go): data is nil, oid is the
	// blob id, and the content is read on first use.
	Lazy *Lazy
}

type NameComparer struct{}

func (NameComparer) Compare(a, b string) int { return strings.Compare(a, b) }

var EmptyKids = immutable.NewSortedMap[string, *Node](NameComparer{})

func (n *Node) Child(name string) *Node {
	c, _ := n.Kids.Get(name)
	return c
}

// Mode is the node's fs.FileMode with type bits.
func (n *Node) Mode() fs.FileMode {
	switch n.Kind {
	case KindDir:
		return fs.ModeDir | n.Perm
	case KindSymlink:
		return fs.ModeSymlink | n.Perm
	}
	return n.Perm
}

// Usage counts what a workspace holds in memory.
type Usage struct {
	Bytes int64 // file contents and symlink targets
	Files int   // regular files and symlinks
	Dirs  int   // directories, not counting the root
}

func (u *Usage) Add(v Usage) {
	u.Bytes += v.Bytes
	u.Files += v.Files
	u.Dirs += v.Dirs
}

func (u *Usage) Sub(v Usage) {
	u.Bytes -= v.Bytes
	u.Files -= v.Files
	u.Dirs -= v.Dirs
}

// Cost is what one version holds by itself.
func (n *Node) Cost() Usage {
	if n.Kind == KindDir {
		return Usage{Dirs: 1}
	}
	return Usage{Bytes: n.Size(), Files: 1}
}

// SubtreeCost returns the cost of n and everything below it; fresh limits
// the count to versions of generation gen (frozen ones stay held elsewhere).
func SubtreeCost(n *Node, gen uint64, freshOnly bool) Usage {
	if freshOnly && n.Gen != gen {
		return Usage{}
	}
	u := n.Cost()
	if n.Kind == KindDir {
		for it := n.Kids.Iterator(); !it.Done(); {
			_, c, _ := it.Next()
			u.Add(SubtreeCost(c, gen, freshOnly))
		}
	}
	return u
}

// CountUnique returns the exact cost of every version reachable from roots,
// each counted once however many roots share it.
func CountUnique(roots ...*Node) Usage {
	seen := make(map[*Node]bool)
	var u Usage
	var visit func(n *Node)
	visit = func(n *Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		u.Add(n.Cost())
		if n.Kind == KindDir {
			for it := n.Kids.Iterator(); !it.Done(); {
				_, c, _ := it.Next()
				visit(c)
			}
		}
	}
	for _, r := range roots {
		if r != nil && !seen[r] {
			visit(r)
			u.Dirs-- // roots are not counted
		}
	}
	return u
}

// Lookup finds the node at canonical comps without following symlinks.
func Lookup(root *Node, comps []string) *Node {
	n := root
	for _, c := range comps {
		if n == nil || n.Kind != KindDir {
			return nil
		}
		n = n.Child(c)
	}
	return n
}

// WalkFiles calls fn for every file and symlink below n, with its path.
func WalkFiles(n *Node, prefix string, fn func(path string, n *Node)) {
	for it := n.Kids.Iterator(); !it.Done(); {
		name, c, _ := it.Next()
		p := name
		if prefix != "" {
			p = prefix + "/" + name
		}
		if c.Kind == KindDir {
			WalkFiles(c, p, fn)
		} else {
			fn(p, c)
		}
	}
}
