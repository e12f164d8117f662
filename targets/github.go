package targets

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-github/v93/github"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/internal/httpretry"
	"github.com/airlock-dev/airlock/targets/internal/transfer"
)

// Errors of the GitHub target.
var (
	// ErrEmptyRepository: GitHub's Git Data API cannot write to a
	// repository without any commit (it answers 409).
	ErrEmptyRepository = errors.New("the GitHub repository is empty")
	// ErrNoToken: no token in GITHUB_TOKEN, GH_TOKEN or `gh auth token`.
	ErrNoToken = errors.New("no GitHub token")
	// ErrSHAMismatch: GitHub made a different object than the staged one.
	ErrSHAMismatch = errors.New("GitHub made a different object than the staged one")
)

// GitHubOptions configures a GitHub target. The zero value talks to
// github.com with a token from the environment.
type GitHubOptions struct {
	// Token authenticates; empty means ResolveGitHubToken.
	Token string
	// APIURL is the REST API's base (GitHub Enterprise, or an emulator);
	// default https://api.github.com/.
	APIURL string
	// GitURL is where repositories are served over HTTPS, for fetching;
	// default https://github.com/.
	GitURL string
	// Transport carries the requests; default http.DefaultTransport.
	Transport http.RoundTripper
	// Retries is how many times one request is retried (default 6).
	Retries int
	// MaxWait is the longest wait for a rate limit before giving up
	// (default 2 minutes).
	MaxWait time.Duration
	// Sleep waits between retries; tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// InlineBytes bounds the text content sent inline in one tree request
	// (default 4 MiB); larger changes are sent in several requests.
	InlineBytes int
}

// GitHub is a repository on GitHub (github:OWNER/REPO), written through
// the Git Data API and read over git's smart HTTP protocol.
type GitHub struct {
	owner, repo string
	client      *github.Client
	gitURL      string
	token       string
	inline      int
	// git speaks smart HTTP: retried as the REST client is, but with
	// the token as a password (git over HTTPS takes no bearer token).
	git transport.Transport

	srcMu sync.Mutex
	src   *ghSource // the blobs of every base pulled from here
}

var githubName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)

// OpenGitHub opens "OWNER/REPO" on GitHub. It does not contact GitHub.
func OpenGitHub(ctx context.Context, name string, opt GitHubOptions) (*GitHub, error) {
	name = strings.TrimSuffix(strings.TrimPrefix(name, "github:"), ".git")
	if !githubName.MatchString(name) || strings.HasSuffix(name, "/.") || strings.HasSuffix(name, "/..") {
		return nil, fmt.Errorf("%q is not a GitHub repository name; write it as OWNER/REPO, for example \"octo-org/reports\"", name)
	}
	owner, repo, _ := strings.Cut(name, "/")
	token := opt.Token
	if token == "" {
		var err error
		if token, err = ResolveGitHubToken(ctx); err != nil {
			return nil, err
		}
	}
	if opt.Retries == 0 {
		opt.Retries = 6
	}
	if opt.MaxWait == 0 {
		opt.MaxWait = 2 * time.Minute
	}
	if opt.Sleep == nil {
		opt.Sleep = httpretry.SleepCtx
	}
	if opt.InlineBytes == 0 {
		opt.InlineBytes = 4 << 20
	}
	base := opt.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	// The client sends the token only to the API's own origin (never to a
	// host a redirect or a response names).
	copts := []github.ClientOptionsFunc{
		github.WithAuthToken(token),
		github.WithTransport(&httpretry.Transport{Base: base, Retries: opt.Retries, MaxWait: opt.MaxWait, Sleep: opt.Sleep, Now: time.Now}),
	}
	if opt.APIURL != "" {
		copts = append(copts, github.WithURLs(new(opt.APIURL), nil))
	}
	client, err := github.NewClient(copts...)
	if err != nil { // the token is not empty: only the URL can be wrong
		return nil, fmt.Errorf("GitHub API URL %q: %w", opt.APIURL, err)
	}
	gitURL := opt.GitURL
	if gitURL == "" {
		gitURL = "https://github.com/"
	}
	return &GitHub{
		owner: owner, repo: repo, client: client, token: token, inline: opt.InlineBytes,
		gitURL: strings.TrimSuffix(gitURL, "/") + "/" + owner + "/" + repo + ".git",
		git: githttp.NewClient(&http.Client{
			Transport: &httpretry.Transport{Base: base, Retries: opt.Retries, MaxWait: opt.MaxWait, Sleep: opt.Sleep, Now: time.Now},
		}),
	}, nil
}

// ResolveGitHubToken finds a token in GITHUB_TOKEN, GH_TOKEN, or the
// GitHub CLI's `gh auth token`, in that order.
func ResolveGitHubToken(ctx context.Context) (string, error) {
	for _, v := range []string{"GITHUB_TOKEN", "GH_TOKEN"} {
		if t := strings.TrimSpace(os.Getenv(v)); t != "" {
			return t, nil
		}
	}
	if gh, err := exec.LookPath("gh"); err == nil {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, gh, "auth", "token").Output()
		if t := strings.TrimSpace(string(out)); err == nil && t != "" {
			return t, nil
		}
	}
	return "", fmt.Errorf("%w: set GITHUB_TOKEN or GH_TOKEN, or log in with `gh auth login`", ErrNoToken)
}

// ID is "github:owner/repo".
func (g *GitHub) ID() string { return "github:" + g.owner + "/" + g.repo }

// Describe names the repository.
func (g *GitHub) Describe() string { return g.ID() }

// redacted hides the token from an error's text, should any layer below
// have put it there, and keeps the chain for errors.Is.
type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

func (g *GitHub) clean(err error) error {
	if err == nil || g.token == "" || !strings.Contains(err.Error(), g.token) {
		return err
	}
	return &redacted{strings.ReplaceAll(err.Error(), g.token, "[token]"), err}
}

// status is the HTTP status of a go-github error, or 0.
func status(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// explain turns GitHub's answers into errors a worker can act on.
func (g *GitHub) explain(what string, err error) error {
	switch status(err) {
	case http.StatusConflict:
		return fmt.Errorf("%s: %w: GitHub's Git Data API cannot write to a repository without commits; "+
			"make a first commit (add a README on github.com, or push one with git), then push again", g.ID(), ErrEmptyRepository)
	case http.StatusUnauthorized:
		return g.clean(fmt.Errorf("%s: %s: GitHub refused the token (401); set a valid GITHUB_TOKEN or run `gh auth login`: %w", g.ID(), what, err))
	case http.StatusNotFound:
		return g.clean(fmt.Errorf("%s: %s: not found (404): check the repository name, and that the token can see it: %w", g.ID(), what, err))
	case http.StatusForbidden:
		return g.clean(fmt.Errorf("%s: %s: forbidden (403): the token needs write access to contents (scope \"repo\" or fine-grained \"Contents: write\"): %w", g.ID(), what, err))
	}
	return g.clean(fmt.Errorf("%s: %s: %w", g.ID(), what, err))
}

// Head returns the commit the branch points at, or zero.
func (g *GitHub) Head(ctx context.Context, ref string) (plumbing.Hash, error) {
	full, err := BranchRef(ref)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	r, _, err := g.client.Git.GetRef(ctx, g.owner, g.repo, strings.TrimPrefix(full, "refs/"))
	switch status(err) {
	case 0:
	case http.StatusNotFound, http.StatusConflict: // no such ref; an empty repository has none
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, g.explain("reading "+full, err)
	}
	if r.GetRef() != full || r.GetObject().GetType() != "commit" {
		// GitHub answers a prefix of several refs with a list; go-github
		// reports that as an error, but be explicit about anything else.
		return plumbing.ZeroHash, fmt.Errorf("%s: %s is not a branch pointing at a commit", g.ID(), full)
	}
	return plumbing.NewHash(r.GetObject().GetSHA()), nil
}

// DefaultBranch is the repository's default branch.
func (g *GitHub) DefaultBranch(ctx context.Context) (string, error) {
	r, _, err := g.client.Repositories.Get(ctx, g.owner, g.repo)
	if err != nil {
		return "", g.explain("reading the repository", err)
	}
	return r.GetDefaultBranch(), nil
}

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
func (g *GitHub) Fetch(ctx context.Context, ref string, paths []string, store *staging.Store) (plumbing.Hash, error) {
	full, err := BranchRef(ref)
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
		return plumbing.ZeroHash, fmt.Errorf("%w: %s has no %s", ErrRefNotFound, g.ID(), full)
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
func (g *GitHub) fetchWhole(ctx context.Context, sess transport.UploadPackSession, caps *capability.List, head plumbing.Hash, full string, paths []string, store *staging.Store) error {
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
func (g *GitHub) fetchError(full string, err error) error {
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return fmt.Errorf("%w: %s is empty, it has no %s", ErrRefNotFound, g.ID(), full)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%s: fetching %s: GitHub refused the token; set a valid GITHUB_TOKEN or run `gh auth login`", g.ID(), full)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%s: not found: check the repository name, and that the token can see it", g.ID())
	}
	return g.clean(fmt.Errorf("%s: fetching %s: %w", g.ID(), full, err))
}

// Push creates the granted chain's trees and commits with the Git Data API
// and moves the branch without forcing.
//
// GitHub's REST API has no compare-and-swap on refs: a non-forced update
// only refuses what is not a fast-forward. The branch is checked against
// the grant just before, so a push lands only where the branch was at the
// grant's old commit or at an ancestor of the pushed commit: never over
// someone else's work.
func (g *GitHub) Push(ctx context.Context, gr approval.Grant, store *staging.Store) error {
	if !gr.Valid() {
		return approval.ErrNoGrant
	}
	if gr.Target() != g.ID() {
		return gr.Check(g.ID(), gr.Ref(), gr.Old(), gr.New())
	}
	ref := gr.Ref()
	if _, err := BranchRef(ref); err != nil {
		return err
	}
	cur, err := g.Head(ctx, ref)
	if err != nil {
		return err
	}
	if done, err := admit(g.ID(), ref, gr, cur); done || err != nil {
		return err
	}
	have := gr.Old()
	if have.IsZero() {
		// A new branch: commits GitHub already has are not sent again,
		// and the sandbox may not even hold their content (a partial
		// pull).
		if have, err = forkPoint(store, gr.New(), func(h plumbing.Hash) (bool, error) {
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
func (g *GitHub) sendCommit(ctx context.Context, store *staging.Store, c *object.Commit) error {
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
	sig := func(s object.Signature) *github.CommitAuthor {
		// Whole seconds in the commit's own zone: the zone is part of the
		// object, and so of its SHA.
		when := time.Unix(s.When.Unix(), 0).In(s.When.Location())
		return &github.CommitAuthor{Name: new(s.Name), Email: new(s.Email), Date: &github.Timestamp{Time: when}}
	}
	in := github.Commit{
		Message:   new(c.Message),
		Tree:      &github.Tree{SHA: new(c.TreeHash.String())},
		Author:    sig(c.Author),
		Committer: sig(c.Committer),
	}
	for _, p := range c.ParentHashes {
		in.Parents = append(in.Parents, &github.Commit{SHA: new(p.String())})
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
func (g *GitHub) sendTree(ctx context.Context, store *staging.Store, parent, tree plumbing.Hash) error {
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

func (g *GitHub) createTrees(ctx context.Context, store *staging.Store, parent plumbing.Hash, changes []staging.TreeChange, known map[plumbing.Hash]bool, allBlobs bool) (plumbing.Hash, error) {
	base := parent
	var batch []*github.TreeEntry
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
		e := &github.TreeEntry{Path: new(ch.Path), Type: new("blob")}
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

func (g *GitHub) createBlob(ctx context.Context, want plumbing.Hash, data []byte) error {
	b, _, err := g.client.Git.CreateBlob(ctx, g.owner, g.repo, github.Blob{
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
func (g *GitHub) moveRef(ctx context.Context, ref string, old, next plumbing.Hash) error {
	var err error
	if old.IsZero() {
		_, _, err = g.client.Git.CreateRef(ctx, g.owner, g.repo, github.CreateRef{Ref: ref, SHA: next.String()})
	} else {
		_, _, err = g.client.Git.UpdateRef(ctx, g.owner, g.repo, ref, github.UpdateRef{SHA: next.String(), Force: new(false)})
	}
	if err == nil {
		return nil
	}
	now, herr := g.Head(ctx, ref)
	if herr == nil && now == next {
		return nil
	}
	if herr == nil && now != old {
		return &MovedError{Ref: ref, Expected: old, Head: now}
	}
	if s := status(err); s == http.StatusUnprocessableEntity && herr == nil {
		// 422 with the ref still at old: GitHub judged next not a
		// fast-forward of it, which a staged chain always is.
		return fmt.Errorf("%s: GitHub refused to move %s to %s (422), though it is still where the push expected: "+
			"the branch is likely protected on GitHub (required reviews or checks); push to another branch and open a pull request: %w",
			g.ID(), BranchName(ref), shortid.Hash(next), g.clean(err))
	}
	return g.explain("moving "+ref, err)
}

// OpenPullRequest opens a pull request from head into base.
func (g *GitHub) OpenPullRequest(ctx context.Context, head, base, title, body string) (string, error) {
	pr, _, err := g.client.PullRequests.Create(ctx, g.owner, g.repo, github.CreatePullRequest{
		Title: new(title), Head: BranchName(head), Base: BranchName(base), Body: new(body),
	})
	if err != nil {
		return "", g.explain("opening a pull request", err)
	}
	return pr.GetHTMLURL(), nil
}
