package transfer

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
)

// CheckOutgoing judges the tree of every commit a push of want sends to a
// target holding have (zero: none of them): the whole tree, as a checkout
// would write it, not only what changed, so that nothing a hostile
// repository planted in a base leaves the sandbox again. A commit the
// sandbox does not hold came from the target, which has it.
func CheckOutgoing(s *staging.Store, want, have plumbing.Hash) error {
	var trees []plumbing.Hash
	for id := want; !id.IsZero() && id != have; {
		c, err := object.GetCommit(s, id)
		if errors.Is(err, plumbing.ErrObjectNotFound) && id != want {
			break
		}
		if err != nil {
			return fmt.Errorf("reading commit %s to push: %w", id, err)
		}
		trees = append(trees, c.TreeHash)
		if len(c.ParentHashes) == 0 {
			break
		}
		id = c.ParentHashes[0]
	}
	if err := staging.CheckTrees(s, trees...); err != nil {
		return fmt.Errorf("refusing to push %s: %w. The commits would carry these entries of the base they were staged on; push to a branch of the repository that base came from (the push leaves them out), or pull a base without them", shortid.Hash(want), err)
	}
	return nil
}

// ToSend lists what a target holding commit have (zero: nothing)
// needs to hold commit want: the commits in between and, for each, the
// trees and blobs its parent lacks. Identical subtrees are skipped by
// hash, so the cost follows what changed.
func ToSend(s storer.EncodedObjectStorer, want, have plumbing.Hash) ([]plumbing.Hash, error) {
	var out []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	add := func(h plumbing.Hash) bool {
		if seen[h] {
			return false
		}
		seen[h] = true
		out = append(out, h)
		return true
	}
	// What the target's commit reaches it holds: a base file moved or
	// copied to another path is not sent again, nor read to be (a lazy
	// base's blob would be, from the repository that already has it).
	// Only trees are walked for it; one the sandbox lacks is not, and
	// what is under it is sent if needed, as before.
	if hc, err := object.GetCommit(s, have); err == nil {
		markTree(s, hc.TreeHash, seen)
	}
	queue := []plumbing.Hash{want}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if id == have || seen[id] {
			continue
		}
		c, err := object.GetCommit(s, id)
		if errors.Is(err, plumbing.ErrObjectNotFound) && id != want {
			// A parent the sandbox never fetched: it came from the target,
			// which has it.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading commit %s to push: %w", id, err)
		}
		add(id)
		var parentTree plumbing.Hash
		for i, p := range c.ParentHashes {
			if pc, err := object.GetCommit(s, p); err == nil && i == 0 {
				parentTree = pc.TreeHash
			}
			if p != have {
				queue = append(queue, p)
			}
		}
		if err := newTreeObjects(s, c.TreeHash, parentTree, add); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// newTreeObjects adds the tree t and everything under it that old (zero:
// none) does not have at the same place.
// markTree marks tree t and everything below it as seen, blobs by their
// ids in the trees: none is read.
func markTree(s storer.EncodedObjectStorer, t plumbing.Hash, seen map[plumbing.Hash]bool) {
	if seen[t] {
		return
	}
	tree, err := object.GetTree(s, t)
	if err != nil {
		return
	}
	seen[t] = true
	for _, e := range tree.Entries {
		switch e.Mode {
		case filemode.Dir:
			markTree(s, e.Hash, seen)
		case filemode.Submodule:
		default:
			seen[e.Hash] = true
		}
	}
}

func newTreeObjects(s storer.EncodedObjectStorer, t, old plumbing.Hash, add func(plumbing.Hash) bool) error {
	if t == old || !add(t) {
		return nil
	}
	tree, err := object.GetTree(s, t)
	if err != nil {
		return fmt.Errorf("reading tree %s to push: %w", t, err)
	}
	olds := map[string]object.TreeEntry{}
	if !old.IsZero() {
		if ot, err := object.GetTree(s, old); err == nil {
			for _, e := range ot.Entries {
				olds[e.Name] = e
			}
		}
	}
	for _, e := range tree.Entries {
		o, had := olds[e.Name]
		if had && o.Hash == e.Hash && o.Mode == e.Mode {
			continue
		}
		switch e.Mode {
		case filemode.Dir:
			var sub plumbing.Hash
			if had && o.Mode == filemode.Dir {
				sub = o.Hash
			}
			if err := newTreeObjects(s, e.Hash, sub, add); err != nil {
				return err
			}
		case filemode.Submodule:
			// A gitlink names a commit of another repository: nothing to send.
		default:
			add(e.Hash)
		}
	}
	return nil
}
