package tree

import "github.com/benbjohnson/immutable"

// WalkApart walks a's and b's trees side by side, calling inA for every
// version of a's that is not the very same node at the same place in b's,
// and inB (nil: not wanted, and b's own subtrees are not walked) likewise
// for b's. A nil tree has no versions.
func WalkApart(a, b *Node, inA, inB func(*Node)) {
	if a == b {
		return
	}
	if a != nil {
		inA(a)
	}
	if b != nil && inB != nil {
		inB(b)
	}
	ZipKids(a, b, func(_ string, ac, bc *Node) {
		if ac != nil || inB != nil {
			WalkApart(ac, bc, inA, inB)
		}
	})
}

// ZipKids calls fn for every name in a's or b's directory (a nil node or
// one that is not a directory has none), in order, with the child each has
// there (nil: none). Both sorted directories are walked side by side: no
// lookups.
func ZipKids(a, b *Node, fn func(name string, ac, bc *Node)) {
	var ai, bi *immutable.SortedMapIterator[string, *Node]
	if a != nil && a.Kind == KindDir {
		ai = a.Kids.Iterator()
	}
	if b != nil && b.Kind == KindDir {
		bi = b.Kids.Iterator()
	}
	next := func(it *immutable.SortedMapIterator[string, *Node]) (string, *Node, bool) {
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

// CostNotIn is the cost of n's tree, leaving out subtrees that are the very
// same nodes at the same place in old.
func CostNotIn(n, old *Node) Usage {
	var u Usage
	WalkApart(n, old, func(v *Node) { u.Add(v.Cost()) }, nil)
	return u
}

// HeldCounter counts the versions a set of roots holds beyond a live tree,
// each version once.
type HeldCounter struct {
	live   *Node
	inLive map[*Node]bool // versions of the live tree at places some root differs
	extra  map[*Node]bool // versions the roots hold that the live tree does not
	roots  map[*Node]bool // the roots added
	mine   []*Node        // scratch: the versions of the root being added
	U      Usage          // the cost of extra, roots left out
}

func NewHeldCounter(live *Node) *HeldCounter {
	return &HeldCounter{live: live, inLive: map[*Node]bool{}, extra: map[*Node]bool{}, roots: map[*Node]bool{live: true}}
}

// Add counts what root holds beyond the live tree and the roots added
// before it.
//
// A version of root's that is not at the same place in the live tree is
// either not in the live tree at all, or is there at another place (it was
// renamed); at that other place root has something else (a tree holds a
// version once), so the same walk meets it on the live tree's side. Once
// the walk is over, whatever it met on root's side that is neither on the
// live tree's side nor counted already is root's own.
func (h *HeldCounter) Add(root *Node) {
	if root == nil || h.roots[root] {
		return
	}
	h.roots[root] = true
	h.mine = h.mine[:0]
	WalkApart(root, h.live,
		func(v *Node) { h.mine = append(h.mine, v) },
		func(v *Node) { h.inLive[v] = true })
	for _, v := range h.mine {
		if v == root || h.inLive[v] || h.extra[v] {
			continue // roots are not counted
		}
		h.extra[v] = true
		h.U.Add(v.Cost())
	}
}
