package push

import (
	"fmt"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
)

// maxBaseCommits bounds the base's commits a request lists: a base with a
// long history pulled whole would otherwise make a request of every
// commit the repository ever had. Past it, a flag says how many more land.
const maxBaseCommits = 1000

// baseLocked fills in, for req (a push of c into an empty target, or onto
// a base the target lacks: no old commit, no fork), what of the sandbox's
// base lands with it: the base's commits, oldest first, and which files
// land as the base has them, unchanged by the worker. The diff and the
// flags cover them already (the diff is against the empty tree); this says
// whose they are.
func (b *Book) baseLocked(req *approval.Request, c *staging.Commit, base plumbing.Hash) (approval.Flag, error) {
	var list []approval.CommitInfo
	todo, seen := []plumbing.Hash{base}, map[plumbing.Hash]bool{base: true}
	more, missing := 0, 0
	for len(todo) > 0 {
		h := todo[0]
		todo = todo[1:]
		cm, err := object.GetCommit(b.cfg.Store, h)
		if err != nil {
			// The sandbox never fetched it: it lands only if the
			// target has it already, or the push fails for want of it.
			missing++
			continue
		}
		if len(list) == maxBaseCommits {
			more++
		} else {
			list = append(list, approval.CommitInfo{ID: h, Message: cm.Message})
		}
		for _, p := range cm.ParentHashes {
			if !seen[p] {
				seen[p] = true
				todo = append(todo, p)
			}
		}
	}
	slices.Reverse(list)
	req.BaseCommits = list
	bc, err := object.GetCommit(b.cfg.Store, base)
	if err != nil {
		return approval.Flag{}, fmt.Errorf("the base commit %s is not in the sandbox: %w", shortid.Hash(base), err)
	}
	changed, err := b.cfg.Store.DiffTrees(bc.TreeHash, c.Tree)
	if err != nil {
		return approval.Flag{}, err
	}
	worker := map[string]bool{}
	for _, ch := range changed {
		worker[ch.Path] = true
	}
	fromBase := 0
	for i := range req.Files {
		if !worker[req.Files[i].Path] {
			req.Files[i].FromBase = true
			fromBase++
		}
	}
	msg := fmt.Sprintf("the target lacks the sandbox's base, so %s of the base land under the worker's (listed as the base's), with %s as the base has them",
		plural(len(list)+more, "1 commit", fmt.Sprintf("%d commits", len(list)+more)), plural(fromBase, "1 file", fmt.Sprintf("%d files", fromBase)))
	if more > 0 {
		msg += fmt.Sprintf("; the oldest %d are not listed", more)
	}
	if missing > 0 {
		msg += fmt.Sprintf("; %s of its history the sandbox never fetched: the push fails unless the target has them", plural(missing, "1 commit", fmt.Sprintf("%d commits", missing)))
	}
	return approval.Flag{Code: approval.FlagBaseCommits, Severity: approval.Medium, Message: msg}, nil
}
