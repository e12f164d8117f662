package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"syscall"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/benbjohnson/immutable"
)

// Apply replays deltas onto the transaction's tree (see memfs's
// Workspace.Apply): every path passes the path guard; a delta that cannot
// apply is an error naming it. A restored identity (Delta.Ino) is never
// handed out again by Inos.
func (t *Txn) Apply(deltas []Delta) error {
	for _, d := range deltas {
		comps, err := pathguard.CheckPath(d.Path)
		if err != nil {
			return fmt.Errorf("memfs: apply: %w", err)
		}
		if d.Remove {
			if _, err := t.Put(comps, nil, false); err != nil && Lookup(t.Root, comps) != nil {
				return fmt.Errorf("memfs: apply: removing %s: %w", d.Path, err)
			}
			continue
		}
		var n *Node
		switch {
		case d.Mode.IsDir():
			if old := Lookup(t.Root, comps); old != nil && old.Kind == KindDir {
				c := *old
				c.Perm, c.Txn, c.Gen = d.Mode.Perm(), t.ID, 0
				n = &c
			} else {
				n = t.NewNode(KindDir, d.Mode, nil)
			}
		case d.Mode&fs.ModeSymlink != 0:
			n = t.NewNode(KindSymlink, d.Mode, d.Data)
			n.OID = d.ID
		case d.Mode.IsRegular() && d.Lazy:
			if d.From == nil || d.ID == [20]byte{} {
				return fmt.Errorf("memfs: apply: %s: a lazy file needs its blob id and a loader", d.Path)
			}
			n = t.NewNode(KindFile, d.Mode, nil)
			n.OID, n.Lazy = d.ID, &Lazy{From: d.From, Size: d.Size}
		case d.Mode.IsRegular():
			n = t.NewNode(KindFile, d.Mode, d.Data)
			n.OID = d.ID
		default:
			return fmt.Errorf("memfs: apply: %s: unsupported mode %v", d.Path, d.Mode)
		}
		if d.Ino != 0 {
			n.Ino = d.Ino
			for {
				// New versions must never take a restored identity.
				cur := t.Inos.Load()
				if cur >= d.Ino || t.Inos.CompareAndSwap(cur, d.Ino) {
					break
				}
			}
		}
		if _, err := t.Put(comps, n, false); err != nil {
			return fmt.Errorf("memfs: apply: %s: %w (a parent is missing or is not a directory)", d.Path, err)
		}
	}
	return nil
}

// Overlay makes the transaction's tree what src has at paths: the same
// file or symlink, or nothing, pruning directories a removal leaves empty
// (see memfs's Workspace.Overlay for the errors).
func (t *Txn) Overlay(src *Node, paths []string) error {
	type op struct {
		comps []string
		n     *Node
	}
	ops := make([]op, 0, len(paths))
	for _, p := range paths {
		comps, err := pathguard.CheckPath(p)
		if err != nil {
			return err
		}
		n := Lookup(src, comps)
		if n != nil && n.Kind == KindDir {
			n = nil
		}
		ops = append(ops, op{comps, n})
	}
	// Removals first, so that a file can replace a directory and the
	// reverse in one overlay.
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].n == nil && ops[j].n != nil })
	for _, o := range ops {
		p := strings.Join(o.comps, "/")
		if o.n == nil {
			if cur := Lookup(t.Root, o.comps); cur == nil || cur.Kind == KindDir {
				continue
			}
			if _, err := t.Put(o.comps, nil, false); err != nil {
				return fmt.Errorf("overlay %s: %w", p, err)
			}
			t.PruneEmpty(o.comps[:len(o.comps)-1])
			continue
		}
		if cur := Lookup(t.Root, o.comps); cur != nil && cur.Kind == KindDir {
			return fmt.Errorf("%s is a directory where the change puts a file; include the files under it in the same change", p)
		}
		if _, err := t.Put(o.comps, o.n, true); err != nil {
			if errors.Is(err, syscall.ENOTDIR) {
				return fmt.Errorf("a parent of %s is a file; include that file's removal in the same change", p)
			}
			return fmt.Errorf("overlay %s: %w", p, err)
		}
	}
	return nil
}

// SeedTree is a directory being seeded: its entries in a plain map, made
// into a node's sorted map once, when all are in (see NewSnapshot).
type SeedTree struct {
	files map[string]*Node
	dirs  map[string]*SeedTree
}

// Add links n at comps, making directories; the errors are those a
// transaction's put gives.
func (d *SeedTree) Add(comps []string, n *Node) error {
	for _, c := range comps[:len(comps)-1] {
		if d.files[c] != nil {
			return syscall.ENOTDIR
		}
		next := d.dirs[c]
		if next == nil {
			next = &SeedTree{}
			if d.dirs == nil {
				d.dirs = map[string]*SeedTree{}
			}
			d.dirs[c] = next
		}
		d = next
	}
	name := comps[len(comps)-1]
	if d.files[name] != nil || d.dirs[name] != nil {
		return fs.ErrExist
	}
	if d.files == nil {
		d.files = map[string]*Node{}
	}
	d.files[name] = n
	return nil
}

// Build makes d's directory node (into, the root, is filled in place).
func (d *SeedTree) Build(t *Txn, into *Node) *Node {
	if into == nil {
		into = t.NewNode(KindDir, 0o755, nil)
	}
	b := immutable.NewSortedMapBuilder[string, *Node](NameComparer{})
	for name, n := range d.files {
		b.Set(name, n)
	}
	for name, sub := range d.dirs {
		b.Set(name, sub.Build(t, nil))
	}
	into.Kids = b.Map()
	return into
}
