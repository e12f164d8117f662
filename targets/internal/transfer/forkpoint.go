package transfer

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/staging"
)

// ForkPoint walks the first parents of commit, as far as store holds them,
// and returns the first that has reports the target holds: where a new
// branch forks from what the target already has. Zero when none is found.
func ForkPoint(store *staging.Store, commit plumbing.Hash, has func(plumbing.Hash) (bool, error)) (plumbing.Hash, error) {
	for id := commit; ; {
		c, err := object.GetCommit(store, id)
		if err != nil || len(c.ParentHashes) == 0 {
			return plumbing.ZeroHash, nil
		}
		p := c.ParentHashes[0]
		ok, err := has(p)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if ok {
			return p, nil
		}
		id = p
	}
}
