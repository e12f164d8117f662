package memfs

import (
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// This file is what a durable session needs of the workspace: the
// differences between two snapshots as a list it can write down (Delta),
// snapshots rebuilt from such lists (Apply), and the whole workspace state
// (live tree and checkpoints) taken at one instant (Saved) and put back
// (Resume). The session's journal holds the rest: content by id, the order
// of the records, what the base is.

// DeltaOf lists what changes from a to b (nil a: the empty tree), in an
// order Apply can replay onto a: a directory before what is in it, a
// removal before what takes its place. Subtrees the two share are skipped,
// so it costs what differs between them.
func DeltaOf(a, b *Snapshot) []Delta {
	var ar *tree.Node
	if a != nil {
		ar = a.root
	}
	var out []Delta
	tree.DeltaNodes(ar, b.root, "", &out)
	return out
}

// Apply returns from with deltas replayed onto it (nil from: the empty
// tree). Every path passes the path guard; a delta that cannot apply (a
// file where a directory is needed) is an error naming it. The workspace
// does not change; Resume installs what Apply builds. The snapshot shares
// with from everything the deltas do not touch.
func (w *Workspace) Apply(from *Snapshot, deltas []Delta) (*Snapshot, error) {
	root := &tree.Node{Kind: tree.KindDir, Perm: 0o755, Mtime: w.now(), Ino: w.nextIno.Add(1), Kids: tree.EmptyKids}
	if from != nil {
		root = from.root
	}
	t := w.builder(root)
	if err := t.Apply(deltas); err != nil {
		return nil, err
	}
	return &Snapshot{root: t.Root}, nil
}

// Intern makes snapshots that were rebuilt separately share what they have
// in common, as the snapshots they were saved from did: versions of one
// file or directory (one Ino) equal in mode and content (content compared
// by identity of its bytes, so the caller loads each blob once) become one
// version. A
// workspace's quota counts each version once, so without this a resumed
// session would count its content once per snapshot that holds it.
func Intern(snaps ...*Snapshot) []*Snapshot {
	in := tree.NewInterner()
	out := make([]*Snapshot, len(snaps))
	for i, s := range snaps {
		if s != nil {
			out[i] = &Snapshot{root: in.Node(s.root)}
		}
	}
	return out
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
			st: state{root: cp.Snap.root, dirty: w.dirtyAgainstBase(cp.Snap.root), usage: tree.Tally{Live: tree.CountUnique(cp.Snap.root)}}}
	}
	roots := append([]*tree.Node{live.root, w.base.root}, w.retained...)
	for _, cp := range list {
		roots = append(roots, cp.st.root)
	}
	next := tree.Tally{Live: tree.CountUnique(live.root), Held: tree.CountUnique(roots...)}
	if err := w.checkQuota("resume", ".", next); err != nil {
		return err
	}
	for i := range list {
		list[i].st.usage.Held = next.Held
	}
	w.cur = state{root: live.root, dirty: w.dirtyAgainstBase(live.root), usage: next}
	w.setCheckpoints(list)
	w.freeze()
	return nil
}

// dirtyAgainstBase is the tracking set of root: every path where it differs
// from the base.
func (w *Workspace) dirtyAgainstBase(root *tree.Node) dirtySet {
	out := emptyDirty
	var cs []Change
	tree.DiffNodes(w.base.root, root, "", &cs)
	for _, c := range cs {
		out = out.Set(c.Path, struct{}{})
	}
	return out
}
