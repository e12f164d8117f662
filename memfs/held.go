package memfs

import (
	"slices"

	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// Counting what the workspace holds, in time proportional to what differs
// between its roots.
//
// Versions are shared by pointer between the live tree, the base, the
// snapshots kept for the caller and the checkpoints, nearly always at the
// same place in each. So what a root holds beyond the live tree is found by
// walking the two side by side and skipping every subtree that is the very
// same node in both: a refused write, a deleted checkpoint or a rollback
// then costs the directories that differ, not the files.
//
// One tree never holds a version at two places (a rename moves a version,
// nothing copies one within a tree), which is what makes the count exact:
// see tree.HeldCounter.Add.

// heldSplit is what the workspace holds beyond its live tree.
type heldSplit struct {
	byRetained    Usage // by the base and the snapshots kept for the caller
	byCheckpoints Usage // by checkpoints alone
}

// total is what the workspace holds, given its live tree's cost.
func (s heldSplit) total(live Usage) Usage {
	live.Add(s.byRetained)
	live.Add(s.byCheckpoints)
	return live
}

// heldParts counts what the workspace holds beyond the live tree. The
// count is kept with the roots it was made of: refusals one after another
// (a run bringing in more files than the quota allows) find the same
// roots, and cost a comparison of them, not a walk.
func (w *Workspace) heldParts() heldSplit {
	roots := w.heldRoots()
	if m := w.heldMemo; m != nil && slices.Equal(m.roots, roots) {
		return m.split
	}
	s := w.countHeld()
	w.heldMemo = &heldMemo{roots: roots, split: s}
	return s
}

// heldMemo is the last count of heldParts, and the roots it counted.
type heldMemo struct {
	roots []*tree.Node
	split heldSplit
}

// heldRoots are the roots heldParts counts, in its order, with nil
// between the kinds (so that a root moving from one kind to the other
// is a change).
func (w *Workspace) heldRoots() []*tree.Node {
	rs := make([]*tree.Node, 0, 3+len(w.retained)+len(w.cps))
	rs = append(rs, w.cur.root, w.base.root, nil)
	rs = append(rs, w.retained...)
	rs = append(rs, nil)
	for _, cp := range w.cps {
		rs = append(rs, cp.st.root)
	}
	return rs
}

func (w *Workspace) countHeld() heldSplit {
	h := tree.NewHeldCounter(w.cur.root)
	h.Add(w.base.root)
	for _, r := range w.retained {
		h.Add(r)
	}
	s := heldSplit{byRetained: h.U}
	for _, cp := range w.cps {
		h.Add(cp.st.root)
	}
	s.byCheckpoints = h.U
	s.byCheckpoints.Sub(s.byRetained)
	return s
}
