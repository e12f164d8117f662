package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	gogithub "github.com/google/go-github/v93/github"

	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/ledgerhead"
)

// RecordLedgerHead moves the ledger's ref on GitHub forward to h through
// the Git Data API: a tree of one inline file, a commit on the one the ref
// held, and the ref created or fast-forwarded (never forced).
func (g *Target) RecordLedgerHead(ctx context.Context, h targets.LedgerHead) error {
	ref := targets.LedgerRef(h.Host, h.Path)
	for try := 0; ; try++ {
		cur, old, ok, err := g.readLedgerHead(ctx, ref)
		if err != nil && !errors.Is(err, targets.ErrNotLedgerHead) {
			return err
		}
		if ok && cur.Seq >= h.Seq {
			return ledgerhead.Ahead(g.ID(), cur, h)
		}
		tree, _, err := g.client.Git.CreateTree(ctx, g.owner, g.repo, "", []*gogithub.TreeEntry{{
			Path: new(ledgerhead.File), Mode: new("100644"), Type: new("blob"), Content: new(h.Text()),
		}})
		if err != nil {
			return g.explain("writing the ledger's head", err)
		}
		c := gogithub.Commit{Message: new(h.Message()), Tree: &gogithub.Tree{SHA: tree.SHA}}
		if !old.IsZero() {
			c.Parents = []*gogithub.Commit{{SHA: new(old.String())}}
		}
		made, _, err := g.client.Git.CreateCommit(ctx, g.owner, g.repo, c, nil)
		if err != nil {
			return g.explain("writing the ledger's head", err)
		}
		err = g.moveRef(ctx, ref, old, plumbing.NewHash(made.GetSHA()))
		if err == nil || try+1 >= ledgerhead.Tries {
			return err
		}
	}
}

func (g *Target) readLedgerHead(ctx context.Context, ref string) (targets.LedgerHead, plumbing.Hash, bool, error) {
	r, _, err := g.client.Git.GetRef(ctx, g.owner, g.repo, strings.TrimPrefix(ref, "refs/"))
	switch status(err) {
	case 0:
	case http.StatusNotFound, http.StatusConflict:
		return targets.LedgerHead{}, plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return targets.LedgerHead{}, plumbing.ZeroHash, false, g.explain("reading "+ref, err)
	}
	if r.GetRef() != ref || r.GetObject().GetType() != "commit" {
		return targets.LedgerHead{}, plumbing.ZeroHash, false, fmt.Errorf("%w: %s is not a ref to a commit", targets.ErrNotLedgerHead, ref)
	}
	id := plumbing.NewHash(r.GetObject().GetSHA())
	c, _, err := g.client.Git.GetCommit(ctx, g.owner, g.repo, id.String())
	if err != nil {
		return targets.LedgerHead{}, id, false, g.explain("reading "+ref, err)
	}
	h, err := ledgerhead.Parse(c.GetMessage())
	return h, id, err == nil, err
}

// ReadLedgerHead returns the head the repository keeps for the ledger at
// path on host; ok is false when it keeps none.
func (g *Target) ReadLedgerHead(ctx context.Context, host, path string) (targets.LedgerHead, bool, error) {
	h, _, ok, err := g.readLedgerHead(ctx, targets.LedgerRef(host, path))
	h.Host, h.Path = host, path // they key the ref; the target does not hold them
	if err != nil {
		return targets.LedgerHead{}, false, g.clean(fmt.Errorf("%s: %w", g.ID(), err))
	}
	return h, ok, nil
}
