package memfs

import (
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unsafe"

	"github.com/airlock-dev/airlock/internal/pathguard"
)

// This file is what a durable session needs of the workspace: the
// differences between two snapshots as a list it can write down (Delta),
// snapshots rebuilt from such lists (Apply), and the whole workspace state
// (live tree and checkpoints) taken at one instant (Saved) and put back
// (Resume). The session's journal holds the rest: content by id, the order
// of the records, what the base is.

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

// DeltaOf lists what changes from a to b (nil a: the empty tree), in an
// order Apply can replay onto a: a directory before what is in it, a
// removal before what takes its place. Subtrees the two share are skipped,
// so it costs what differs between them.
func DeltaOf(a, b *Snapshot) []Delta {
	var ar *node
	if a != nil {
		ar = a.root
	}
	var out []Delta
	deltaNodes(ar, b.root, "", &out)
	return out
}

func deltaNodes(a, b *node, p string, out *[]Delta) {
	if a == b {
		return
	}
	if p != "" {
		switch {
		case b == nil:
			*out = append(*out, Delta{Path: p, Remove: true})
			return
		case a != nil && a.kind != b.kind:
			*out = append(*out, Delta{Path: p, Remove: true})
			a = nil
		}
		if b.kind != kindDir {
			if a == nil || a.perm != b.perm || a.ino != b.ino || !sameData(a, b) {
				d := Delta{Path: p, Mode: b.mode(), Data: b.data, Ino: b.ino, ID: b.oid}
				if b.lz != nil {
					d.Lazy, d.Size, d.From = true, b.lz.size, b.lz.ld
				}
				*out = append(*out, d)
			}
			return
		}
		if a == nil || a.perm != b.perm || a.ino != b.ino {
			*out = append(*out, Delta{Path: p, Mode: b.mode(), Ino: b.ino})
		}
	}
	join := func(k string) string {
		if p == "" {
			return k
		}
		return p + "/" + k
	}
	if a == nil {
		for it := b.kids.Iterator(); !it.Done(); {
			k, bc, _ := it.Next()
			deltaNodes(nil, bc, join(k), out)
		}
		return
	}
	// Both directories: walk their sorted entries side by side, so a
	// wide directory costs a pointer comparison per entry.
	ai, bi := a.kids.Iterator(), b.kids.Iterator()
	ak, ac, aok := ai.Next()
	bk, bc, bok := bi.Next()
	for aok || bok {
		switch {
		case bok && (!aok || bk < ak):
			deltaNodes(nil, bc, join(bk), out)
			bk, bc, bok = bi.Next()
		case aok && (!bok || ak < bk):
			*out = append(*out, Delta{Path: join(ak), Remove: true})
			ak, ac, aok = ai.Next()
		default:
			if ac != bc {
				deltaNodes(ac, bc, join(ak), out)
			}
			ak, ac, aok = ai.Next()
			bk, bc, bok = bi.Next()
		}
	}
}

// Apply returns from with deltas replayed onto it (nil from: the empty
// tree). Every path passes the path guard; a delta that cannot apply (a
// file where a directory is needed) is an error naming it. The workspace
// does not change; Resume installs what Apply builds. The snapshot shares
// with from everything the deltas do not touch.
func (w *Workspace) Apply(from *Snapshot, deltas []Delta) (*Snapshot, error) {
	root := &node{kind: kindDir, perm: 0o755, mtime: w.now(), ino: w.nextIno.Add(1), kids: emptyKids}
	if from != nil {
		root = from.root
	}
	t := w.builder(root)
	for _, d := range deltas {
		comps, err := pathguard.CheckPath(d.Path)
		if err != nil {
			return nil, fmt.Errorf("memfs: apply: %w", err)
		}
		if d.Remove {
			if _, err := t.put(comps, nil, false); err != nil && lookup(t.root, comps) != nil {
				return nil, fmt.Errorf("memfs: apply: removing %s: %w", d.Path, err)
			}
			continue
		}
		var n *node
		switch {
		case d.Mode.IsDir():
			if old := lookup(t.root, comps); old != nil && old.kind == kindDir {
				c := *old
				c.perm, c.txn, c.gen = d.Mode.Perm(), t.id, 0
				n = &c
			} else {
				n = t.newNode(kindDir, d.Mode, nil)
			}
		case d.Mode&fs.ModeSymlink != 0:
			n = t.newNode(kindSymlink, d.Mode, d.Data)
			n.oid = d.ID
		case d.Mode.IsRegular() && d.Lazy:
			if d.From == nil || d.ID == [20]byte{} {
				return nil, fmt.Errorf("memfs: apply: %s: a lazy file needs its blob id and a loader", d.Path)
			}
			n = t.newNode(kindFile, d.Mode, nil)
			n.oid, n.lz = d.ID, &lazy{ld: d.From, size: d.Size}
		case d.Mode.IsRegular():
			n = t.newNode(kindFile, d.Mode, d.Data)
			n.oid = d.ID
		default:
			return nil, fmt.Errorf("memfs: apply: %s: unsupported mode %v", d.Path, d.Mode)
		}
		if d.Ino != 0 {
			n.ino = d.Ino
			for {
				// New versions must never take a restored identity.
				cur := w.nextIno.Load()
				if cur >= d.Ino || w.nextIno.CompareAndSwap(cur, d.Ino) {
					break
				}
			}
		}
		if _, err := t.put(comps, n, false); err != nil {
			return nil, fmt.Errorf("memfs: apply: %s: %w (a parent is missing or is not a directory)", d.Path, err)
		}
	}
	return &Snapshot{root: t.root}, nil
}

// Intern makes snapshots that were rebuilt separately share what they have
// in common, as the snapshots they were saved from did: versions of one
// file or directory (one Ino) equal in mode and content (content compared
// by identity of its bytes, so the caller loads each blob once) become one
// version. A
// workspace's quota counts each version once, so without this a resumed
// session would count its content once per snapshot that holds it.
func Intern(snaps ...*Snapshot) []*Snapshot {
	in := interner{canon: map[string]*node{}, done: map[*node]*node{}}
	out := make([]*Snapshot, len(snaps))
	for i, s := range snaps {
		if s != nil {
			out[i] = &Snapshot{root: in.node(s.root)}
		}
	}
	return out
}

type interner struct {
	canon map[string]*node // identity, mode and content -> the one version
	done  map[*node]*node  // a version seen -> its canonical one
	key   strings.Builder
}

func (in *interner) node(n *node) *node {
	if c, ok := in.done[n]; ok {
		return c
	}
	var kids []*node
	var names []string
	if n.kind == kindDir {
		for it := n.kids.Iterator(); !it.Done(); {
			k, c, _ := it.Next()
			names = append(names, k)
			kids = append(kids, in.node(c))
		}
	}
	in.key.Reset()
	fmt.Fprintf(&in.key, "%d\x00%d\x00%o\x00", n.ino, n.kind, n.perm)
	if n.kind == kindDir {
		for i, k := range names {
			fmt.Fprintf(&in.key, "%s\x00%p\x00", k, kids[i])
		}
	} else if n.lz != nil {
		fmt.Fprintf(&in.key, "lazy %x %p", n.oid, n.lz.ld)
	} else {
		fmt.Fprintf(&in.key, "%p\x00%d", unsafe.SliceData(n.data), len(n.data))
	}
	key := in.key.String()
	c, ok := in.canon[key]
	if !ok {
		c = n
		if n.kind == kindDir {
			changed := false
			i := 0
			for it := n.kids.Iterator(); !it.Done(); i++ {
				_, old, _ := it.Next()
				changed = changed || old != kids[i]
			}
			if changed {
				cp := *n
				b := cp.kids
				for i, k := range names {
					b = b.Set(k, kids[i])
				}
				cp.kids = b
				c = &cp
			}
		}
		in.canon[key] = c
	}
	in.done[n] = c
	return c
}

// SavedCheckpoint is a checkpoint as a durable session writes it down.
type SavedCheckpoint struct {
	Name string
	Time time.Time
	Snap *Snapshot
}

// Saved returns the live tree and the checkpoints, oldest first, all from
// one instant.
func (w *Workspace) Saved() (*Snapshot, []SavedCheckpoint) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freeze()
	cps := make([]SavedCheckpoint, len(w.cps))
	for i, cp := range w.cps {
		cps[i] = SavedCheckpoint{Name: cp.name, Time: cp.time, Snap: &Snapshot{root: cp.st.root}}
	}
	return &Snapshot{root: w.cur.root}, cps
}

// Resume makes live the live tree and cps the checkpoints, as a durable
// session saved them; the base is what SetBase set before. The tallies are
// counted afresh. It refuses, changing nothing, a state over the quotas (a
// session saved under larger ones) or a checkpoint name given twice.
func (w *Workspace) Resume(live *Snapshot, cps []SavedCheckpoint) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]bool{}
	list := make([]checkpoint, len(cps))
	for i, cp := range cps {
		if err := checkCheckpointName(cp.Name); err != nil {
			return err
		}
		if seen[cp.Name] {
			return fmt.Errorf("memfs: resume: checkpoint %q given twice", cp.Name)
		}
		seen[cp.Name] = true
		list[i] = checkpoint{name: cp.Name, time: cp.Time, bases: w.bases,
			st: state{root: cp.Snap.root, dirty: w.dirtyAgainstBase(cp.Snap.root), usage: usage{live: countUnique(cp.Snap.root)}}}
	}
	roots := append([]*node{live.root, w.base.root}, w.retained...)
	for _, cp := range list {
		roots = append(roots, cp.st.root)
	}
	next := usage{live: countUnique(live.root), held: countUnique(roots...)}
	if err := w.checkQuota("resume", ".", next); err != nil {
		return err
	}
	for i := range list {
		list[i].st.usage.held = next.held
	}
	w.cur = state{root: live.root, dirty: w.dirtyAgainstBase(live.root), usage: next}
	w.setCheckpoints(list)
	w.freeze()
	return nil
}

// dirtyAgainstBase is the tracking set of tree: every path where it differs
// from the base.
func (w *Workspace) dirtyAgainstBase(tree *node) dirtySet {
	out := emptyDirty
	var cs []Change
	diffNodes(w.base.root, tree, "", &cs)
	for _, c := range cs {
		out = out.Set(c.Path, struct{}{})
	}
	return out
}
