package staging

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
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
	// live: 1 the object stays, 2 what it reaches stays too.
	live := make(map[plumbing.Hash]uint8, s.Len())
	var mark func(h plumbing.Hash, deep bool)
	mark = func(h plumbing.Hash, deep bool) {
		if h.IsZero() || live[h] == 2 || live[h] == 1 && !deep {
			return
		}
		o, ok := s.held(h) // a blob only a source has is not the store's to keep
		if !ok {
			return
		}
		if !deep {
			live[h] = 1
			return
		}
		live[h] = 2
		switch o.Type() {
		case plumbing.CommitObject:
			c, err := object.DecodeCommit(s, o)
			if err != nil {
				return
			}
			mark(c.TreeHash, true)
			for _, p := range c.ParentHashes {
				mark(p, false)
			}
		case plumbing.TreeObject:
			t, err := object.DecodeTree(s, o)
			if err != nil {
				return
			}
			for _, e := range t.Entries {
				if e.Mode != filemode.Submodule {
					mark(e.Hash, true)
				}
			}
		case plumbing.TagObject:
			t, err := object.DecodeTag(s, o)
			if err != nil {
				return
			}
			mark(t.Target, true)
		}
	}
	for _, r := range roots {
		mark(r, true)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out Collected
	for h, o := range s.objs {
		if live[h] == 0 {
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
