package tree

import (
	"io/fs"
	"strings"

	"github.com/airlock-dev/airlock/internal/change"
)

// Change is a file or symlink that differs from the base.
type Change struct {
	Path string
	Kind change.Kind
	Mode fs.FileMode // the new mode; for a deletion, the old one
	Size int64       // the new size; for a deletion, the old one
}

// DiffPath compares the file or symlink at p in two trees.
func DiffPath(from, to *Node, p string) (Change, bool) {
	comps := strings.Split(p, "/")
	a, b := Lookup(from, comps), Lookup(to, comps)
	if a != nil && a.Kind == KindDir {
		a = nil
	}
	if b != nil && b.Kind == KindDir {
		b = nil
	}
	return DiffEntries(a, b, p)
}

// DiffEntries compares two versions of the file or symlink at p (nil: none).
func DiffEntries(a, b *Node, p string) (Change, bool) {
	switch {
	case a == nil && b == nil:
		return Change{}, false
	case a == nil:
		return Change{Path: p, Kind: change.Create, Mode: b.Mode(), Size: b.Size()}, true
	case b == nil:
		return Change{Path: p, Kind: change.Delete, Mode: a.Mode(), Size: a.Size()}, true
	case SameContent(a, b):
		return Change{}, false
	}
	return Change{Path: p, Kind: change.Update, Mode: b.Mode(), Size: b.Size()}, true
}

// SameContent reports whether git would see a and b as the same entry: same
// type, same executable bit, same bytes.
func SameContent(a, b *Node) bool {
	if a == b {
		return true
	}
	if a.Kind != b.Kind || a.Kind == KindFile && (a.Perm&0o100 != 0) != (b.Perm&0o100 != 0) {
		return false
	}
	return SameData(a, b)
}

func DiffNodes(a, b *Node, p string, out *[]Change) {
	if a == b {
		return
	}
	aDir, bDir := a != nil && a.Kind == KindDir, b != nil && b.Kind == KindDir
	if p != "" {
		af, bf := a, b
		if aDir {
			af = nil
		}
		if bDir {
			bf = nil
		}
		if c, ok := DiffEntries(af, bf, p); ok {
			*out = append(*out, c)
		}
	}
	if !aDir && !bDir {
		return
	}
	join := func(k string) string {
		if p == "" {
			return k
		}
		return p + "/" + k
	}
	// Every name of either directory, each once: a wide directory costs
	// a pointer comparison per entry, not a Lookup.
	ZipKids(a, b, func(k string, ac, bc *Node) {
		if ac != bc {
			DiffNodes(ac, bc, join(k), out)
		}
	})
}

// CountDiff is len(DiffNodes(a, b)) without building the list.
func CountDiff(a, b *Node) int {
	if a == b {
		return 0
	}
	aDir, bDir := a != nil && a.Kind == KindDir, b != nil && b.Kind == KindDir
	n := 0
	af, bf := a, b
	if aDir {
		af = nil
	}
	if bDir {
		bf = nil
	}
	if af != nil || bf != nil {
		if af == nil || bf == nil || !SameContent(af, bf) {
			n++
		}
	}
	if !aDir && !bDir {
		return n
	}
	ZipKids(a, b, func(_ string, ac, bc *Node) { n += CountDiff(ac, bc) })
	return n
}
