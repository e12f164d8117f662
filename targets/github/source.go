package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gogithub "github.com/google/go-github/v93/github"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/internal/transfer"
)

// ghSource reads the blobs of a GitHub repository on demand, by id, over
// git's smart HTTP protocol: the source of a lazy base pulled from GitHub
// (staging.BlobSource). One read is one request: a POST to git-upload-pack
// wanting the blob (GitHub serves wants of any object it has, as git's
// partial clones need: uploadpack.allowAnySHA1InWant, or the reachable
// variant). ReadBlobs wants many in that one request.
//
// What comes back is hostile: the pack is judged by the sizes the REST
// listing declared before anything is inflated, and each blob is checked
// against its id and its declared size (the store checks the id again).
type ghSource struct {
	id    string // the target's ID, for errors
	sess  func() (transport.UploadPackSession, error)
	clean func(error) error
	sizes sync.Map // plumbing.Hash -> int64: the sizes GitHub listed
}

var _ staging.BlobBatchSource = (*ghSource)(nil)

// maxGitHubBlob bounds a blob whose size was never listed (a resumed
// session's source knows no sizes): GitHub refuses files over 100 MiB, so
// nothing larger is a blob of a repository there.
const maxGitHubBlob = 100 << 20

// blobTimeout bounds one request for blobs: a read has no context of its
// own (it is a file read in the workspace), and must not hang on a server
// that stops answering.
const blobTimeout = 5 * time.Minute

// maxBatchBytes bounds what one request asks for, by declared size: a
// batch is held whole (compressed, then inflated) before it is handed on.
const maxBatchBytes = 32 << 20

// uploadSession is a smart HTTP session with the repository.
func (g *Target) uploadSession() (transport.UploadPackSession, error) {
	ep, err := transport.NewEndpoint(g.gitURL)
	if err != nil {
		return nil, fmt.Errorf("%s: the git URL: %w", g.ID(), err)
	}
	return g.git.NewUploadPackSession(ep, &githttp.BasicAuth{Username: "x-access-token", Password: g.token})
}

// source returns the repository's blob source, made once: the sizes of
// every pull accumulate in it.
func (g *Target) source() *ghSource {
	g.srcMu.Lock()
	defer g.srcMu.Unlock()
	if g.src == nil {
		g.src = &ghSource{id: g.ID(), sess: g.uploadSession, clean: g.clean}
	}
	return g.src
}

// uploadPack sends req and writes the pack that answers it into objects,
// which judge it by declared sizes before parsing it.
func uploadPack(ctx context.Context, sess transport.UploadPackSession, req *packp.UploadPackRequest, objects *transfer.Bounded) (err error) {
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := resp.Close(); err == nil {
			err = cerr
		}
	}()
	var r io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	w, _ := objects.PackfileWriter()
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// specialBlobs lists the blobs under tree that the tree check reads
// (staging.CheckReads), which the store must hold. Paths deeper than the
// workspace takes are not walked, as copyCommit does not walk them.
func specialBlobs(ctx context.Context, objects storer.EncodedObjectStorer, tree plumbing.Hash) ([]plumbing.Hash, error) {
	var out []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	var walk func(h plumbing.Hash, prefix string) error
	walk = func(h plumbing.Hash, prefix string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(prefix) > pathguard.MaxPathBytes {
			return nil
		}
		t, err := object.GetTree(objects, h)
		if err != nil {
			return fmt.Errorf("reading tree %s at %q: %w", shortid.Hash(h), transfer.OrRoot(prefix), err)
		}
		for _, e := range t.Entries {
			switch {
			case e.Mode == filemode.Dir:
				if err := walk(e.Hash, prefix+"/"+e.Name); err != nil {
					return err
				}
			case e.Mode == filemode.Submodule:
			case staging.CheckReads(e.Name, e.Mode) && !seen[e.Hash]:
				seen[e.Hash] = true
				out = append(out, e.Hash)
			}
		}
		return nil
	}
	return out, walk(tree, "")
}

// errListingTruncated: GitHub cannot list one directory whole.
var errListingTruncated = errors.New("GitHub's listing of a tree is truncated")

// listSizes notes in src the size of every blob under tree, from GitHub's
// REST listing of trees: one recursive listing, unless GitHub truncates it
// (past 100,000 entries or 7 MB), then the tree's own entries and each
// subtree listed the same way.
func (g *Target) listSizes(ctx context.Context, tree plumbing.Hash, src *ghSource) error {
	t, _, err := g.client.Git.GetTree(ctx, g.owner, g.repo, tree.String(), true)
	if err != nil {
		return g.explain("listing tree "+shortid.Hash(tree), err)
	}
	if !t.GetTruncated() {
		src.note(t.Entries)
		return nil
	}
	if t, _, err = g.client.Git.GetTree(ctx, g.owner, g.repo, tree.String(), false); err != nil {
		return g.explain("listing tree "+shortid.Hash(tree), err)
	}
	if t.GetTruncated() {
		return errListingTruncated
	}
	src.note(t.Entries)
	for _, e := range t.Entries {
		if e.GetType() == "tree" {
			if err := g.listSizes(ctx, plumbing.NewHash(e.GetSHA()), src); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *ghSource) note(entries []*gogithub.TreeEntry) {
	for _, e := range entries {
		if e.GetType() == "blob" && e.Size != nil && *e.Size >= 0 {
			s.sizes.Store(plumbing.NewHash(e.GetSHA()), int64(*e.Size))
		}
	}
}

// declared is blob h's listed size, or the most GitHub holds.
func (s *ghSource) declared(h plumbing.Hash) (int64, bool) {
	if n, ok := s.sizes.Load(h); ok {
		return n.(int64), true
	}
	return maxGitHubBlob, false
}

// fetch fetches the blobs hs into objects, in one request, judged by
// their declared sizes.
func (s *ghSource) fetch(ctx context.Context, hs []plumbing.Hash, objects *transfer.Bounded) error {
	sess, err := s.sess()
	if err != nil {
		return err
	}
	var budget int64
	for _, h := range hs {
		n, _ := s.declared(h)
		budget += n
	}
	// Room for the pack's own bytes too: its header and trailer, each
	// object's header, and zlib's few bytes over content it cannot
	// compress.
	slack := 64 + 64*int64(len(hs)) + budget/256
	room := objects.Room
	objects.Room = func(n int64) error {
		if n > budget+slack {
			return fmt.Errorf("%d bytes where the %s asked for were listed at %d", n, blobs(len(hs)), budget)
		}
		return room(n)
	}
	defer func() { objects.Room = room }()
	req := packp.NewUploadPackRequest()
	req.Wants = hs
	req.Capabilities.Set(capability.OFSDelta)
	req.Capabilities.Set(capability.Sideband64k)
	req.Capabilities.Set(capability.NoProgress)
	req.Capabilities.Set(capability.Agent, capability.DefaultAgent())
	if err := uploadPack(ctx, sess, req, objects); err != nil {
		if errors.Is(err, targets.ErrObjectTooLarge) {
			return fmt.Errorf("%s: fetching %s: %w", s.id, blobs(len(hs)), err)
		}
		return s.clean(fmt.Errorf("%s: fetching %s: %w", s.id, blobs(len(hs)), err))
	}
	return nil
}

// ReadBlobs fetches the blobs hs, in as few requests as maxBatchBytes
// allows, and checks each against its id and declared size. A blob the
// answer lacks is an error: GitHub has every blob of a tree it listed.
func (s *ghSource) ReadBlobs(hs []plumbing.Hash) (map[plumbing.Hash][]byte, error) {
	out := make(map[plumbing.Hash][]byte, len(hs))
	for len(hs) > 0 {
		var batch []plumbing.Hash
		var bytes int64
		for len(hs) > 0 {
			n, _ := s.declared(hs[0])
			if len(batch) > 0 && bytes+n > maxBatchBytes {
				break
			}
			batch, bytes, hs = append(batch, hs[0]), bytes+n, hs[1:]
		}
		objects := transfer.NewBounded(func(int64) error { return nil })
		ctx, cancel := context.WithTimeout(context.Background(), blobTimeout)
		err := s.fetch(ctx, batch, objects)
		cancel()
		if err != nil {
			return nil, err
		}
		for _, h := range batch {
			data, err := s.take(objects, h)
			if err != nil {
				return nil, err
			}
			out[h] = data
		}
	}
	return out, nil
}

// take reads blob h out of a fetched pack and checks it.
func (s *ghSource) take(objects *transfer.Bounded, h plumbing.Hash) ([]byte, error) {
	o, err := objects.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("%s: GitHub's answer to a want of the blob does not hold it: %w", s.id, plumbing.ErrObjectNotFound)
	}
	n, known := s.declared(h)
	if known && o.Size() != n {
		return nil, fmt.Errorf("%s: blob %s holds %d bytes where GitHub listed %d", s.id, h, o.Size(), n)
	}
	data, err := staging.ObjectBytes(o)
	if err != nil {
		return nil, err
	}
	if plumbing.ComputeHash(plumbing.BlobObject, data) != h {
		return nil, fmt.Errorf("%s: blob %s from GitHub does not hash to its id", s.id, h)
	}
	return data, nil
}

// ReadBlob fetches blob h: one request. A blob GitHub listed larger than
// max is refused without a request; the answer itself is bounded by the
// listed sizes before it is inflated (fetch).
func (s *ghSource) ReadBlob(h plumbing.Hash, max int64) ([]byte, error) {
	if n, ok := s.declared(h); ok && n > max {
		return nil, fmt.Errorf("%s: blob %s is %d bytes, more than the %d the sandbox may read", s.id, h, n, max)
	}
	m, err := s.ReadBlobs([]plumbing.Hash{h})
	if err != nil {
		return nil, err
	}
	if int64(len(m[h])) > max {
		return nil, fmt.Errorf("%s: blob %s is %d bytes, more than the %d the sandbox may read", s.id, h, len(m[h]), max)
	}
	return m[h], nil
}

// HasBlob: a blob GitHub listed is taken to be there still (GitHub keeps
// what a branch once reached; a push that needs a blob it lost fails in
// its own request, before the ref moves). One never listed is fetched.
func (s *ghSource) HasBlob(h plumbing.Hash) error {
	_, err := s.BlobSize(h)
	return err
}

// BlobSize is the size GitHub listed for h. A blob never listed (the
// source of a resumed session knows no sizes) is fetched to be measured:
// what asks a size will most often read the content next, and the store
// keeps nothing a source reads here, so that read fetches it again.
func (s *ghSource) BlobSize(h plumbing.Hash) (int64, error) {
	if n, ok := s.declared(h); ok {
		return n, nil
	}
	data, err := s.ReadBlob(h, maxGitHubBlob)
	if err != nil {
		return 0, err
	}
	s.sizes.Store(h, int64(len(data)))
	return int64(len(data)), nil
}

func blobs(n int) string {
	if n == 1 {
		return "1 blob"
	}
	return fmt.Sprintf("%d blobs", n)
}
