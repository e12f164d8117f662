package memfs

import (
	"io/fs"
	"strings"
	"time"

	"github.com/benbjohnson/immutable"
)

type kind uint8

const (
	kindDir kind = iota
	kindFile
	kindSymlink
)

// node is one version of a file, directory or symlink.
//
// Versions are shared between the live tree, the base and checkpoints. A
// version is frozen once its generation is older than the workspace's: from
// then on nothing changes it, so readers of a snapshot need no lock. Only a
// file version of the current generation is ever changed in place (by writes
// through an open handle); directories are never changed in place: every
// change path-copies from the root inside a transaction.
type node struct {
	kind  kind
	perm  fs.FileMode // permission bits only
	mtime time.Time
	ino   uint64 // identity of the file across versions
	gen   uint64 // generation this version was made in
	txn   uint64 // transaction that made it; that transaction may change it in place
	data  []byte // file content or symlink target
	kids  *immutable.SortedMap[string, *node]
	// oid is the git blob id of data when the caller that made the
	// version knew it (a seed from a tree, a restore); zero when unknown.
	// Anything that changes data clears it.
	oid [20]byte
	// lz is set on a lazy version (see lazy.go): data is nil, oid is the
	// blob id, and the content is read on first use.
	lz *lazy
}

type nameComparer struct{}

func (nameComparer) Compare(a, b string) int { return strings.Compare(a, b) }

var emptyKids = immutable.NewSortedMap[string, *node](nameComparer{})

func (n *node) child(name string) *node {
	c, _ := n.kids.Get(name)
	return c
}

// mode is the node's fs.FileMode with type bits.
func (n *node) mode() fs.FileMode {
	switch n.kind {
	case kindDir:
		return fs.ModeDir | n.perm
	case kindSymlink:
		return fs.ModeSymlink | n.perm
	}
	return n.perm
}

// Usage counts what a workspace holds in memory.
type Usage struct {
	Bytes int64 // file contents and symlink targets
	Files int   // regular files and symlinks
	Dirs  int   // directories, not counting the root
}

func (u *Usage) add(v Usage) {
	u.Bytes += v.Bytes
	u.Files += v.Files
	u.Dirs += v.Dirs
}

func (u *Usage) sub(v Usage) {
	u.Bytes -= v.Bytes
	u.Files -= v.Files
	u.Dirs -= v.Dirs
}

// cost is what one version holds by itself.
func (n *node) cost() Usage {
	if n.kind == kindDir {
		return Usage{Dirs: 1}
	}
	return Usage{Bytes: n.size(), Files: 1}
}

// usage keeps two tallies: the live tree, and everything held in memory,
// which adds versions that only the base or a checkpoint still reaches.
// Quotas apply to the held tally: that is what the process pays for.
type usage struct {
	live Usage
	held Usage
}

// subtreeCost returns the cost of n and everything below it; fresh limits
// the count to versions of generation gen (frozen ones stay held elsewhere).
func subtreeCost(n *node, gen uint64, freshOnly bool) Usage {
	if freshOnly && n.gen != gen {
		return Usage{}
	}
	u := n.cost()
	if n.kind == kindDir {
		for it := n.kids.Iterator(); !it.Done(); {
			_, c, _ := it.Next()
			u.add(subtreeCost(c, gen, freshOnly))
		}
	}
	return u
}

// countUnique returns the exact cost of every version reachable from roots,
// each counted once however many roots share it.
func countUnique(roots ...*node) Usage {
	seen := make(map[*node]bool)
	var u Usage
	var visit func(n *node)
	visit = func(n *node) {
		if seen[n] {
			return
		}
		seen[n] = true
		u.add(n.cost())
		if n.kind == kindDir {
			for it := n.kids.Iterator(); !it.Done(); {
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

// lookup finds the node at canonical comps without following symlinks.
func lookup(root *node, comps []string) *node {
	n := root
	for _, c := range comps {
		if n == nil || n.kind != kindDir {
			return nil
		}
		n = n.child(c)
	}
	return n
}

// walkFiles calls fn for every file and symlink below n, with its path.
func walkFiles(n *node, prefix string, fn func(path string, n *node)) {
	for it := n.kids.Iterator(); !it.Done(); {
		name, c, _ := it.Next()
		p := name
		if prefix != "" {
			p = prefix + "/" + name
		}
		if c.kind == kindDir {
			walkFiles(c, p, fn)
		} else {
			fn(p, c)
		}
	}
}
