package memfs

import (
	"slices"

	"github.com/benbjohnson/immutable"
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
// see heldCounter.add.

// walkApart walks a's and b's trees side by side, calling inA for every
// version of a's that is not the very same node at the same place in b's,
// and inB (nil: not wanted, and b's own subtrees are not walked) likewise
// for b's. A nil tree has no versions.
func walkApart(a, b *node, inA, inB func(*node)) {
	if a == b {
		return
	}
	if a != nil {
		inA(a)
	}
	if b != nil && inB != nil {
		inB(b)
	}
	zipKids(a, b, func(_ string, ac, bc *node) {
		if ac != nil || inB != nil {
			walkApart(ac, bc, inA, inB)
		}
	})
}

// zipKids calls fn for every name in a's or b's directory (a nil node or
// one that is not a directory has none), in order, with the child each has
// there (nil: none). Both sorted directories are walked side by side: no
// lookups.
func zipKids(a, b *node, fn func(name string, ac, bc *node)) {
	var ai, bi *immutable.SortedMapIterator[string, *node]
	if a != nil && a.kind == kindDir {
		ai = a.kids.Iterator()
	}
	if b != nil && b.kind == kindDir {
		bi = b.kids.Iterator()
	}
	next := func(it *immutable.SortedMapIterator[string, *node]) (string, *node, bool) {
		if it == nil {
			return "", nil, false
		}
		return it.Next()
	}
	ak, ac, aok := next(ai)
	bk, bc, bok := next(bi)
	for aok || bok {
		// Equal first: path-copied directories share their names' bytes,
		// so the usual case is one pointer comparison, not a string order.
		switch {
		case aok && bok && ak == bk:
			fn(ak, ac, bc)
			ak, ac, aok = next(ai)
			bk, bc, bok = next(bi)
		case bok && (!aok || bk < ak):
			fn(bk, nil, bc)
			bk, bc, bok = next(bi)
		default:
			fn(ak, ac, nil)
			ak, ac, aok = next(ai)
		}
	}
}

// costNotIn is the cost of n's tree, leaving out subtrees that are the very
// same nodes at the same place in old.
func costNotIn(n, old *node) Usage {
	var u Usage
	walkApart(n, old, func(v *node) { u.add(v.cost()) }, nil)
	return u
}

// heldCounter counts the versions a set of roots holds beyond a live tree,
// each version once.
type heldCounter struct {
	live   *node
	inLive map[*node]bool // versions of the live tree at places some root differs
	extra  map[*node]bool // versions the roots hold that the live tree does not
	roots  map[*node]bool // the roots added
	mine   []*node        // scratch: the versions of the root being added
	u      Usage          // the cost of extra, roots left out
}

func newHeldCounter(live *node) *heldCounter {
	return &heldCounter{live: live, inLive: map[*node]bool{}, extra: map[*node]bool{}, roots: map[*node]bool{live: true}}
}

// add counts what root holds beyond the live tree and the roots added
// before it.
//
// A version of root's that is not at the same place in the live tree is
// either not in the live tree at all, or is there at another place (it was
// renamed); at that other place root has something else (a tree holds a
// version once), so the same walk meets it on the live tree's side. Once
// the walk is over, whatever it met on root's side that is neither on the
// live tree's side nor counted already is root's own.
func (h *heldCounter) add(root *node) {
	if root == nil || h.roots[root] {
		return
	}
	h.roots[root] = true
	h.mine = h.mine[:0]
	walkApart(root, h.live,
		func(v *node) { h.mine = append(h.mine, v) },
		func(v *node) { h.inLive[v] = true })
	for _, v := range h.mine {
		if v == root || h.inLive[v] || h.extra[v] {
			continue // roots are not counted
		}
		h.extra[v] = true
		h.u.add(v.cost())
	}
}

// heldSplit is what the workspace holds beyond its live tree.
type heldSplit struct {
	byRetained    Usage // by the base and the snapshots kept for the caller
	byCheckpoints Usage // by checkpoints alone
}

// total is what the workspace holds, given its live tree's cost.
func (s heldSplit) total(live Usage) Usage {
	live.add(s.byRetained)
	live.add(s.byCheckpoints)
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
	roots []*node
	split heldSplit
}

// heldRoots are the roots heldParts counts, in its order, with nil
// between the kinds (so that a root moving from one kind to the other
// is a change).
func (w *Workspace) heldRoots() []*node {
	rs := make([]*node, 0, 3+len(w.retained)+len(w.cps))
	rs = append(rs, w.cur.root, w.base.root, nil)
	rs = append(rs, w.retained...)
	rs = append(rs, nil)
	for _, cp := range w.cps {
		rs = append(rs, cp.st.root)
	}
	return rs
}

func (w *Workspace) countHeld() heldSplit {
	h := newHeldCounter(w.cur.root)
	h.add(w.base.root)
	for _, r := range w.retained {
		h.add(r)
	}
	s := heldSplit{byRetained: h.u}
	for _, cp := range w.cps {
		h.add(cp.st.root)
	}
	s.byCheckpoints = h.u
	s.byCheckpoints.sub(s.byRetained)
	return s
}
