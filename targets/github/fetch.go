package github

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/internal/transfer"
)

// Fetch pulls the branch's tip lazily (a lazy base: see
// staging.BlobSource): one shallow fetch over git's smart HTTP protocol
// with filter blob:none brings the commit and its trees, one listing of
// the tree by the REST API the size of every blob, and one more fetch the
// blobs the tree check reads (links, .gitmodules and the like), which the
// store holds. Every other blob stays on GitHub until it is first read,
// then is fetched by id (see ghSource). A server that does not offer the
// filter gets the whole tip fetched and its blobs under paths copied, as
// before the base was lazy.
//
// Why the REST API for the sizes: a partial fetch says nothing of the
// blobs it leaves out, and protocol v2's object-info, which would, is not
// something GitHub offers. One recursive listing names every blob with its
// size in one request; fetching the blobs to measure them would be the
// whole download the filter saves.
func (g *Target) Fetch(ctx context.Context, ref string, paths []string, store *staging.Store) (plumbing.Hash, error) {
	full, err := targets.BranchRef(ref)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sess, err := g.uploadSession()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return plumbing.ZeroHash, g.fetchError(full, err)
	}
	refs, err := adv.AllReferences()
	if err != nil {
		return plumbing.ZeroHash, g.fetchError(full, err)
	}
	r, err := refs.Reference(plumbing.ReferenceName(full))
	if err != nil || r.Type() != plumbing.HashReference {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s has no %s", targets.ErrRefNotFound, g.ID(), full)
	}
	head := r.Hash()
	lazy := adv.Capabilities.Supports(capability.Filter)
	// Objects are judged by their declared size before they are inflated.
	objects := transfer.NewBounded(store.Room)
	if err := uploadPack(ctx, sess, tipRequest(adv.Capabilities, head, lazy), objects); err != nil {
		return plumbing.ZeroHash, g.fetchError(full, err)
	}
	if !lazy {
		if err := transfer.CopyCommit(ctx, objects, head, paths, true, store); err != nil {
			return plumbing.ZeroHash, err
		}
		return head, nil
	}
	c, err := object.GetCommit(objects, head)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("%s: fetching %s: %w", g.ID(), full, err)
	}
	src := g.source()
	// The listing of sizes and the fetch of the blobs the tree check
	// reads go at once: two round trips in the time of one.
	listed := make(chan error, 1)
	go func() { listed <- g.listSizes(ctx, c.TreeHash, src) }()
	special, err := specialBlobs(ctx, objects, c.TreeHash)
	if err == nil && len(special) > 0 {
		err = src.fetch(ctx, special, objects)
	}
	lerr := <-listed
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if errors.Is(lerr, errListingTruncated) {
		// A directory too large for GitHub to list: the whole tip, as
		// before the base was lazy.
		if err := g.fetchWhole(ctx, sess, adv.Capabilities, head, full, paths, store); err != nil {
			return plumbing.ZeroHash, err
		}
		return head, nil
	}
	if lerr != nil {
		return plumbing.ZeroHash, lerr
	}
	if err := transfer.CopyCommit(ctx, objects, head, paths, false, store); err != nil {
		return plumbing.ZeroHash, err
	}
	store.AddSource(g.ID(), src)
	return head, nil
}

// fetchWhole fetches head's whole tree, blobs included, and copies it.
func (g *Target) fetchWhole(ctx context.Context, sess transport.UploadPackSession, caps *capability.List, head plumbing.Hash, full string, paths []string, store *staging.Store) error {
	objects := transfer.NewBounded(store.Room)
	if err := uploadPack(ctx, sess, tipRequest(caps, head, false), objects); err != nil {
		return g.fetchError(full, err)
	}
	return transfer.CopyCommit(ctx, objects, head, paths, true, store)
}

// tipRequest asks for commit head alone (depth 1), without its blobs
// when lazy, of a server advertising caps.
func tipRequest(caps *capability.List, head plumbing.Hash, lazy bool) *packp.UploadPackRequest {
	req := packp.NewUploadPackRequestFromCapabilities(caps)
	req.Wants = []plumbing.Hash{head}
	req.Depth = packp.DepthCommits(1)
	req.Capabilities.Set(capability.Shallow)
	if caps.Supports(capability.NoProgress) {
		req.Capabilities.Set(capability.NoProgress)
	}
	if lazy {
		req.Capabilities.Set(capability.Filter)
		req.Filter = packp.FilterBlobNone()
	}
	return req
}

// fetchError turns what smart HTTP answered into the errors a worker can
// act on, without the token.
func (g *Target) fetchError(full string, err error) error {
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return fmt.Errorf("%w: %s is empty, it has no %s", targets.ErrRefNotFound, g.ID(), full)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%s: fetching %s: GitHub refused the token; set a valid GITHUB_TOKEN or run `gh auth login`", g.ID(), full)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%s: not found: check the repository name, and that the token can see it", g.ID())
	}
	return g.clean(fmt.Errorf("%s: fetching %s: %w", g.ID(), full, err))
}
