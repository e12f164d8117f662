package staging

import (
	"github.com/go-git/go-git/v5/plumbing"
)

// Collected is what Collect let go.
type Collected struct {
	Objects int
	Bytes   int64
}

// Collect drops every object that none of roots reaches, and returns what
// it dropped. A commit reaches its tree and, shallowly, its parent commit
// objects (not their trees: history the sandbox fetched for nothing but a
// fork point is not worth keeping); a tree reaches its entries; a tag its
// target. Roots the store lacks are skipped.
//
// The caller must make sure nothing writes objects meanwhile whose roots
// it has not listed (the session collects under its own lock, which every
// writer holds).
func (s *Store) Collect(roots ...plumbing.Hash) Collected {
	// Decode errors are not the collector's to report: what an object
	// that does not decode would reach is simply not kept.
	live := make(map[plumbing.Hash]bool, s.Len())
	_ = s.reach(roots, nil, func(h plumbing.Hash, _ plumbing.EncodedObject, _ bool) error { live[h] = true; return nil }, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out Collected
	for h, o := range s.objs {
		if !live[h] {
			out.Objects++
			out.Bytes += o.Size()
			s.bytes -= o.Size()
			delete(s.objs, h)
		}
	}
	return out
}

// Roots lists the objects the area needs: the base commit, every staged
// commit, and the trees of what the workspace holds of each.
func (a *Area) Roots() []plumbing.Hash {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := []plumbing.Hash{a.base.id, a.base.tree, a.base.view}
	for _, l := range a.chain {
		out = append(out, l.id, l.view)
	}
	return out
}
