package github

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	gogithub "github.com/google/go-github/v93/github"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/internal/transfer"
)

// Push creates the granted chain's trees and commits with the Git Data API
// and moves the branch without forcing.
//
// GitHub's REST API has no compare-and-swap on refs: a non-forced update
// only refuses what is not a fast-forward. The branch is checked against
// the grant just before, so a push lands only where the branch was at the
// grant's old commit or at an ancestor of the pushed commit: never over
// someone else's work.
func (g *Target) Push(ctx context.Context, gr approval.Grant, store *staging.Store) error {
	if !gr.Valid() {
		return approval.ErrNoGrant
	}
	if gr.Target() != g.ID() {
		return gr.Check(g.ID(), gr.Ref(), gr.Old(), gr.New())
	}
	ref := gr.Ref()
	if _, err := targets.BranchRef(ref); err != nil {
		return err
	}
	cur, err := g.Head(ctx, ref)
	if err != nil {
		return err
	}
	if done, err := targets.Admit(g.ID(), ref, gr, cur); done || err != nil {
		return err
	}
	have := gr.Old()
	if have.IsZero() {
		// A new branch: commits GitHub already has are not sent again,
		// and the sandbox may not even hold their content (a partial
		// pull).
		if have, err = transfer.ForkPoint(store, gr.New(), func(h plumbing.Hash) (bool, error) {
			_, _, err := g.client.Git.GetCommit(ctx, g.owner, g.repo, h.String())
			switch status(err) {
			case 0:
				return true, nil
			case http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusConflict:
				return false, nil
			}
			return false, g.explain("looking for commit "+shortid.Hash(h), err)
		}); err != nil {
			return err
		}
	}
	if err := transfer.CheckOutgoing(store, gr.New(), have); err != nil {
		return err
	}
	chain, err := chainOf(store, gr.New(), have)
	if err != nil {
		return err
	}
	for _, c := range chain {
		if err := g.sendCommit(ctx, store, c); err != nil {
			return err
		}
	}
	return g.moveRef(ctx, ref, gr.Old(), gr.New())
}

// chainOf lists the commits from have (exclusive) to want, oldest first.
// Staged chains are linear.
func chainOf(store *staging.Store, want, have plumbing.Hash) ([]*object.Commit, error) {
	var chain []*object.Commit
	for id := want; id != have; {
		c, err := object.GetCommit(store, id)
		if err != nil {
			return nil, fmt.Errorf("reading commit %s to push: %w", id, err)
		}
		if len(c.ParentHashes) > 1 {
			return nil, fmt.Errorf("commit %s is a merge: the GitHub target pushes linear chains only", id)
		}
		if c.PGPSignature != "" || c.MergeTag != "" || len(c.ExtraHeaders) > 0 {
			return nil, fmt.Errorf("commit %s carries headers the Git Data API cannot reproduce", id)
		}
		chain = append(chain, c)
		if len(c.ParentHashes) == 0 {
			if !have.IsZero() {
				return nil, fmt.Errorf("commit %s does not descend from %s", want, have)
			}
			break
		}
		id = c.ParentHashes[0]
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain, nil
}

// sendCommit creates c's tree and c on GitHub, and checks that GitHub's
// SHAs are the staged ones.
func (g *Target) sendCommit(ctx context.Context, store *staging.Store, c *object.Commit) error {
	var parentTree plumbing.Hash
	if len(c.ParentHashes) == 1 {
		p, err := object.GetCommit(store, c.ParentHashes[0])
		if err == nil {
			parentTree = p.TreeHash
		} else {
			gc, _, err := g.client.Git.GetCommit(ctx, g.owner, g.repo, c.ParentHashes[0].String())
			if err != nil {
				return g.explain("reading commit "+c.ParentHashes[0].String(), err)
			}
			parentTree = plumbing.NewHash(gc.GetTree().GetSHA())
		}
	}
	if err := g.sendTree(ctx, store, parentTree, c.TreeHash); err != nil {
		return err
	}
	sig := func(s object.Signature) *gogithub.CommitAuthor {
		// Whole seconds in the commit's own zone: the zone is part of the
		// object, and so of its SHA.
		when := time.Unix(s.When.Unix(), 0).In(s.When.Location())
		return &gogithub.CommitAuthor{Name: new(s.Name), Email: new(s.Email), Date: &gogithub.Timestamp{Time: when}}
	}
	in := gogithub.Commit{
		Message:   new(c.Message),
		Tree:      &gogithub.Tree{SHA: new(c.TreeHash.String())},
		Author:    sig(c.Author),
		Committer: sig(c.Committer),
	}
	for _, p := range c.ParentHashes {
		in.Parents = append(in.Parents, &gogithub.Commit{SHA: new(p.String())})
	}
	out, _, err := g.client.Git.CreateCommit(ctx, g.owner, g.repo, in, nil)
	if err != nil {
		return g.explain("creating commit "+shortid.Hash(c.Hash), err)
	}
	if got := out.GetSHA(); got != c.Hash.String() {
		return fmt.Errorf("%s: %w: commit %s came back as %s (author, committer, dates or message were changed on the way); nothing was pushed",
			g.ID(), ErrSHAMismatch, c.Hash, got)
	}
	return nil
}

// sendTree makes GitHub hold tree, given that it holds parent: one request
// per batch of changed paths, text inline in the tree entries (GitHub's
// limit on content-creating requests makes a blob request per file too
// slow), binary content as blobs. A tree that does not come back with the
// staged SHA is sent again with every new file as a blob, which leaves
// nothing to interpretation.
func (g *Target) sendTree(ctx context.Context, store *staging.Store, parent, tree plumbing.Hash) error {
	if parent == tree {
		return nil
	}
	changes, err := store.DiffTrees(parent, tree)
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		return nil // the same content: GitHub holds it
	}
	known := map[plumbing.Hash]bool{}
	for _, ch := range changes {
		if ch.Op != change.Create {
			known[ch.OldHash] = true // in the parent's tree, so on GitHub
		}
	}
	got, err := g.createTrees(ctx, store, parent, changes, known, false)
	if err != nil {
		return err
	}
	if got == tree {
		return nil
	}
	if got, err = g.createTrees(ctx, store, parent, changes, known, true); err != nil {
		return err
	}
	if got != tree {
		return fmt.Errorf("%s: %w: tree %s came back as %s; nothing was pushed", g.ID(), ErrSHAMismatch, tree, got)
	}
	return nil
}

const maxTreeEntries = 2000

func (g *Target) createTrees(ctx context.Context, store *staging.Store, parent plumbing.Hash, changes []staging.TreeChange, known map[plumbing.Hash]bool, allBlobs bool) (plumbing.Hash, error) {
	base := parent
	var batch []*gogithub.TreeEntry
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		baseTree := ""
		if !base.IsZero() {
			baseTree = base.String()
		}
		t, _, err := g.client.Git.CreateTree(ctx, g.owner, g.repo, baseTree, batch)
		if err != nil {
			return g.explain(fmt.Sprintf("creating a tree of %d entries", len(batch)), err)
		}
		base = plumbing.NewHash(t.GetSHA())
		batch, size = batch[:0], 0
		return nil
	}
	for _, ch := range changes {
		e := &gogithub.TreeEntry{Path: new(ch.Path), Type: new("blob")}
		switch {
		case ch.Op == change.Delete:
			e.Mode = new(modeString(ch.OldMode))
		case ch.NewMode == filemode.Submodule:
			e.Mode, e.Type, e.SHA = new("160000"), new("commit"), new(ch.NewHash.String())
		case known[ch.NewHash]:
			e.Mode, e.SHA = new(modeString(ch.NewMode)), new(ch.NewHash.String())
		default:
			data, err := store.ReadBlob(ch.NewHash)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			e.Mode = new(modeString(ch.NewMode))
			if !allBlobs && len(data) <= g.inline && inlineable(data) {
				if size+len(data) > g.inline {
					if err := flush(); err != nil {
						return plumbing.ZeroHash, err
					}
				}
				e.Content = new(string(data))
				size += len(data)
			} else {
				if err := g.createBlob(ctx, ch.NewHash, data); err != nil {
					return plumbing.ZeroHash, err
				}
				known[ch.NewHash] = true
				e.SHA = new(ch.NewHash.String())
			}
		}
		batch = append(batch, e)
		if len(batch) >= maxTreeEntries {
			if err := flush(); err != nil {
				return plumbing.ZeroHash, err
			}
		}
	}
	if err := flush(); err != nil {
		return plumbing.ZeroHash, err
	}
	return base, nil
}

// inlineable: JSON carries text as UTF-8, so only valid UTF-8 without NUL
// can go inline unchanged.
func inlineable(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

func (g *Target) createBlob(ctx context.Context, want plumbing.Hash, data []byte) error {
	b, _, err := g.client.Git.CreateBlob(ctx, g.owner, g.repo, gogithub.Blob{
		Content:  base64.StdEncoding.EncodeToString(data),
		Encoding: new("base64"),
	})
	if err != nil {
		return g.explain(fmt.Sprintf("creating a blob of %d bytes", len(data)), err)
	}
	if b.GetSHA() != want.String() {
		return fmt.Errorf("%s: %w: blob %s came back as %s; nothing was pushed", g.ID(), ErrSHAMismatch, want, b.GetSHA())
	}
	return nil
}

func modeString(m filemode.FileMode) string {
	switch m {
	case filemode.Executable:
		return "100755"
	case filemode.Symlink:
		return "120000"
	case filemode.Submodule:
		return "160000"
	}
	return "100644"
}

// moveRef creates ref at next, or moves it from old to next without force.
// Whatever GitHub answers, a failed attempt is settled by reading the ref:
// at next means the push landed (a retried request that had in fact gone
// through), elsewhere means the target moved.
func (g *Target) moveRef(ctx context.Context, ref string, old, next plumbing.Hash) error {
	var err error
	if old.IsZero() {
		_, _, err = g.client.Git.CreateRef(ctx, g.owner, g.repo, gogithub.CreateRef{Ref: ref, SHA: next.String()})
	} else {
		_, _, err = g.client.Git.UpdateRef(ctx, g.owner, g.repo, ref, gogithub.UpdateRef{SHA: next.String(), Force: new(false)})
	}
	if err == nil {
		return nil
	}
	now, herr := g.Head(ctx, ref)
	if herr == nil && now == next {
		return nil
	}
	if herr == nil && now != old {
		return &targets.MovedError{Ref: ref, Expected: old, Head: now}
	}
	if s := status(err); s == http.StatusUnprocessableEntity && herr == nil {
		// 422 with the ref still at old: GitHub judged next not a
		// fast-forward of it, which a staged chain always is.
		return fmt.Errorf("%s: GitHub refused to move %s to %s (422), though it is still where the push expected: "+
			"the branch is likely protected on GitHub (required reviews or checks); push to another branch and open a pull request: %w",
			g.ID(), targets.BranchName(ref), shortid.Hash(next), g.clean(err))
	}
	return g.explain("moving "+ref, err)
}
