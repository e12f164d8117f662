package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gogithub "github.com/google/go-github/v93/github"

	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/internal/httpretry"
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

// Options configures a GitHub target (targets.GitHubOptions: the
// registry's Env carries it, so it is declared where Env is).
type Options = targets.GitHubOptions

// Target is a repository on GitHub (github:OWNER/REPO), written through
// the Git Data API and read over git's smart HTTP protocol.
type Target struct {
	owner, repo string
	client      *gogithub.Client
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

// Open opens "OWNER/REPO" on GitHub. It does not contact GitHub.
func Open(ctx context.Context, name string, opt Options) (*Target, error) {
	name = strings.TrimSuffix(strings.TrimPrefix(name, "github:"), ".git")
	if !githubName.MatchString(name) || strings.HasSuffix(name, "/.") || strings.HasSuffix(name, "/..") {
		return nil, fmt.Errorf("%q is not a GitHub repository name; write it as OWNER/REPO, for example \"octo-org/reports\"", name)
	}
	owner, repo, _ := strings.Cut(name, "/")
	token := opt.Token
	if token == "" {
		var err error
		if token, err = ResolveToken(ctx); err != nil {
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
	copts := []gogithub.ClientOptionsFunc{
		gogithub.WithAuthToken(token),
		gogithub.WithTransport(&httpretry.Transport{Base: base, Retries: opt.Retries, MaxWait: opt.MaxWait, Sleep: opt.Sleep, Now: time.Now}),
	}
	if opt.APIURL != "" {
		copts = append(copts, gogithub.WithURLs(new(opt.APIURL), nil))
	}
	client, err := gogithub.NewClient(copts...)
	if err != nil { // the token is not empty: only the URL can be wrong
		return nil, fmt.Errorf("GitHub API URL %q: %w", opt.APIURL, err)
	}
	gitURL := opt.GitURL
	if gitURL == "" {
		gitURL = "https://github.com/"
	}
	return &Target{
		owner: owner, repo: repo, client: client, token: token, inline: opt.InlineBytes,
		gitURL: strings.TrimSuffix(gitURL, "/") + "/" + owner + "/" + repo + ".git",
		git: githttp.NewClient(&http.Client{
			Transport: &httpretry.Transport{Base: base, Retries: opt.Retries, MaxWait: opt.MaxWait, Sleep: opt.Sleep, Now: time.Now},
		}),
	}, nil
}

// ResolveToken finds a token in GITHUB_TOKEN, GH_TOKEN, or the
// GitHub CLI's `gh auth token`, in that order.
func ResolveToken(ctx context.Context) (string, error) {
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
func (g *Target) ID() string { return "github:" + g.owner + "/" + g.repo }

// Describe names the repository.
func (g *Target) Describe() string { return g.ID() }

// redacted hides the token from an error's text, should any layer below
// have put it there, and keeps the chain for errors.Is.
type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

func (g *Target) clean(err error) error {
	if err == nil || g.token == "" || !strings.Contains(err.Error(), g.token) {
		return err
	}
	return &redacted{strings.ReplaceAll(err.Error(), g.token, "[token]"), err}
}

// status is the HTTP status of a go-github error, or 0.
func status(err error) int {
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// explain turns GitHub's answers into errors a worker can act on.
func (g *Target) explain(what string, err error) error {
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
func (g *Target) Head(ctx context.Context, ref string) (plumbing.Hash, error) {
	full, err := targets.BranchRef(ref)
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
func (g *Target) DefaultBranch(ctx context.Context) (string, error) {
	r, _, err := g.client.Repositories.Get(ctx, g.owner, g.repo)
	if err != nil {
		return "", g.explain("reading the repository", err)
	}
	return r.GetDefaultBranch(), nil
}

// Protected reports whether GitHub's branch protection covers branch; a
// branch that does not exist yet is not protected.
func (g *Target) Protected(ctx context.Context, branch string) (bool, error) {
	b, resp, err := g.client.Repositories.GetBranch(ctx, g.owner, g.repo, branch, 0)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return false, nil
	}
	if err != nil {
		return false, g.explain("reading branch "+branch, err)
	}
	return b.GetProtected(), nil
}

// OpenPullRequest opens a pull request from head into base.
func (g *Target) OpenPullRequest(ctx context.Context, head, base, title, body string) (string, error) {
	pr, _, err := g.client.PullRequests.Create(ctx, g.owner, g.repo, gogithub.CreatePullRequest{
		Title: new(title), Head: targets.BranchName(head), Base: targets.BranchName(base), Body: new(body),
	})
	if err != nil {
		return "", g.explain("opening a pull request", err)
	}
	return pr.GetHTMLURL(), nil
}
