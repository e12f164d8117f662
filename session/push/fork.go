package push

import (
	"context"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// forkTimeout bounds the one read of the target a new branch's fork
// point may take.
const forkTimeout = 10 * time.Second

// forkLocked finds, for p's push of c to a branch the target does not
// have yet, the commit the branch forks from, as git shows a new branch:
// the sandbox's base commit, when the target holds it. The request then
// diffs against its tree (the worker's changes, not every file of the
// repository) and names it and its branch.
//
// The target holds the base when the base was pulled from it (Repo.BaseFrom),
// or when its branch of the same name as the base's is at that commit:
// a base pulled from another repository (a working tree, say) that this
// one is a clone of. Asking the target about the base's branch is the
// one read this costs, and only then; a base the target has only further
// back in a branch's history is not found, and the reviewer sees every
// file, as before.
func (b *Book) forkLocked(p *push, c *staging.Commit) (fork plumbing.Hash, branch string, tree plumbing.Hash) {
	if c.Base.IsZero() {
		return plumbing.ZeroHash, "", plumbing.ZeroHash
	}
	bc, err := object.GetCommit(b.cfg.Store, c.Base)
	if err != nil {
		return plumbing.ZeroHash, "", plumbing.ZeroHash
	}
	ref := p.r.BaseRef()
	if !p.r.BaseFrom(p.spec) {
		if ref == "" || ref == p.ref {
			return plumbing.ZeroHash, "", plumbing.ZeroHash
		}
		ctx, cancel := context.WithTimeout(context.Background(), forkTimeout)
		defer cancel()
		if head, err := p.t.Head(ctx, ref); err != nil || head != c.Base {
			return plumbing.ZeroHash, "", plumbing.ZeroHash
		}
	}
	if ref != "" {
		branch = targets.BranchName(ref)
	}
	return c.Base, branch, bc.TreeHash
}
