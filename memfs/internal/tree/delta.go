package tree

import (
	"fmt"
	"io/fs"
	"strings"
	"unsafe"
)

// Delta is one entry of what differs between two snapshots, directories
// included (a worker may make an empty one). Deltas are replayed in order.
type Delta struct {
	Path string
	// Remove: nothing is at Path any more (a file, or a directory and all
	// below it). Otherwise Mode says what is there: fs.ModeDir|perm,
	// fs.ModeSymlink|perm, or the permission bits of a regular file.
	Remove bool
	Mode   fs.FileMode
	// Data is a file's content or a link's target, shared with the
	// snapshot: it must not be modified.
	Data []byte
	// Ino is the identity of the file or directory across versions (a
	// renamed file keeps it): what lets Intern share what was shared.
	Ino uint64
	// ID is Data's git blob id when the version knows it (see
	// SeedFile.ID); zero otherwise. Apply keeps it with the version.
	ID [20]byte
	// Lazy: the file's content is blob ID of Size bytes, not yet read;
	// Data is nil and From reads it (see SeedFile.From).
	Lazy bool
	Size int64
	From Loader
}

func DeltaNodes(a, b *Node, p string, out *[]Delta) {
	if a == b {
		return
	}
	if p != "" {
		switch {
		case b == nil:
			*out = append(*out, Delta{Path: p, Remove: true})
			return
		case a != nil && a.Kind != b.Kind:
			*out = append(*out, Delta{Path: p, Remove: true})
			a = nil
		}
		if b.Kind != KindDir {
			if a == nil || a.Perm != b.Perm || a.Ino != b.Ino || !SameData(a, b) {
				d := Delta{Path: p, Mode: b.Mode(), Data: b.Data, Ino: b.Ino, ID: b.OID}
				if b.Lazy != nil {
					d.Lazy, d.Size, d.From = true, b.Lazy.Size, b.Lazy.From
				}
				*out = append(*out, d)
			}
			return
		}
		if a == nil || a.Perm != b.Perm || a.Ino != b.Ino {
			*out = append(*out, Delta{Path: p, Mode: b.Mode(), Ino: b.Ino})
		}
	}
	join := func(k string) string {
		if p == "" {
			return k
		}
		return p + "/" + k
	}
	if a == nil {
		for it := b.Kids.Iterator(); !it.Done(); {
			k, bc, _ := it.Next()
			DeltaNodes(nil, bc, join(k), out)
		}
		return
	}
	// Both directories: walk their sorted entries side by side, so a
	// wide directory costs a pointer comparison per entry.
	ai, bi := a.Kids.Iterator(), b.Kids.Iterator()
	ak, ac, aok := ai.Next()
	bk, bc, bok := bi.Next()
	for aok || bok {
		switch {
		case bok && (!aok || bk < ak):
			DeltaNodes(nil, bc, join(bk), out)
			bk, bc, bok = bi.Next()
		case aok && (!bok || ak < bk):
			*out = append(*out, Delta{Path: join(ak), Remove: true})
			ak, ac, aok = ai.Next()
		default:
			if ac != bc {
				DeltaNodes(ac, bc, join(ak), out)
			}
			ak, ac, aok = ai.Next()
			bk, bc, bok = bi.Next()
		}
	}
}

type Interner struct {
	canon map[string]*Node // identity, mode and content -> the one version
	done  map[*Node]*Node  // a version seen -> its canonical one
	key   strings.Builder
}

// NewInterner returns an Interner that has seen nothing yet.
func NewInterner() *Interner {
	return &Interner{canon: map[string]*Node{}, done: map[*Node]*Node{}}
}

func (in *Interner) Node(n *Node) *Node {
	if c, ok := in.done[n]; ok {
		return c
	}
	var kids []*Node
	var names []string
	if n.Kind == KindDir {
		for it := n.Kids.Iterator(); !it.Done(); {
			k, c, _ := it.Next()
			names = append(names, k)
			kids = append(kids, in.Node(c))
		}
	}
	in.key.Reset()
	fmt.Fprintf(&in.key, "%d\x00%d\x00%o\x00", n.Ino, n.Kind, n.Perm)
	if n.Kind == KindDir {
		for i, k := range names {
			fmt.Fprintf(&in.key, "%s\x00%p\x00", k, kids[i])
		}
	} else if n.Lazy != nil {
		fmt.Fprintf(&in.key, "lazy %x %p", n.OID, n.Lazy.From)
	} else {
		fmt.Fprintf(&in.key, "%p\x00%d", unsafe.SliceData(n.Data), len(n.Data))
	}
	key := in.key.String()
	c, ok := in.canon[key]
	if !ok {
		c = n
		if n.Kind == KindDir {
			changed := false
			i := 0
			for it := n.Kids.Iterator(); !it.Done(); i++ {
				_, old, _ := it.Next()
				changed = changed || old != kids[i]
			}
			if changed {
				cp := *n
				b := cp.Kids
				for i, k := range names {
					b = b.Set(k, kids[i])
				}
				cp.Kids = b
				c = &cp
			}
		}
		in.canon[key] = c
	}
	in.done[n] = c
	return c
}
