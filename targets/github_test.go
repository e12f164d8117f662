package targets_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	gogithub "github.com/google/go-github/v93/github"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/github"
	"github.com/airlock-dev/airlock/targets/githubemu"
	"github.com/airlock-dev/airlock/targets/targettest"
)

const emuToken = "ghp_emulatorTOKEN0123456789abcdefghijkl"

// waits records the retry waits a target asked for, without waiting.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// emulated is a GitHub target on a fresh emulator. The repository gets a
// first commit on branch "init", as a repository created on github.com
// with a README has: GitHub's Git Data API cannot write to an empty one
// (TestGitHubEmptyRepository is that case).
func emulated(t *testing.T, opt targets.GitHubOptions) (*github.Target, *githubemu.Server, *gitInspector, *waits) {
	t.Helper()
	emu, err := githubemu.New(t.TempDir(), "octo-org", "reports", emuToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	insp := &gitInspector{dir: emu.Dir()}
	w := &waits{}
	opt.APIURL, opt.GitURL, opt.Token, opt.Sleep = emu.URL, emu.GitURL, emuToken, w.sleep
	tgt, err := github.Open(context.Background(), "octo-org/reports", opt)
	if err != nil {
		t.Fatal(err)
	}
	return tgt, emu, insp, w
}

// longTests says whether AIRLOCK_LONG_TESTS asks for the long runs (CI
// sets it): the suite's big cases (a 50 MB file, 10,000 files) take tens
// of seconds each under the race detector, a minute on the emulator, so
// the README's test command leaves them to CI's long run.
var longTests = os.Getenv("AIRLOCK_LONG_TESTS") != ""

// runsOf is how many times a fault test repeats: short with -short, long
// under AIRLOCK_LONG_TESTS, def otherwise.
func runsOf(def, long, short int) int {
	switch {
	case testing.Short():
		return short
	case longTests:
		return long
	}
	return def
}

func TestGitHubEmulated(t *testing.T) {
	t.Parallel() // long and independent: alongside the others, the package stays well within Go's default timeout
	targettest.Run(t, targettest.Harness{Short: !longTests, New: func(t *testing.T) (targets.Target, targettest.Inspector) {
		tgt, _, insp, _ := emulated(t, targets.GitHubOptions{})
		insp.Commit(t, "init", map[string]targettest.File{"README.md": {Data: "# reports\n"}})
		return tgt, insp
	}})
}

// Small inline batches, so the 10,000-file case sends many tree requests
// chained on each other's results.
func TestGitHubEmulatedBatches(t *testing.T) {
	t.Parallel() // long and independent: alongside the others, the package stays well within Go's default timeout
	targettest.Run(t, targettest.Harness{New: func(t *testing.T) (targets.Target, targettest.Inspector) {
		tgt, _, insp, _ := emulated(t, targets.GitHubOptions{InlineBytes: 1000})
		insp.Commit(t, "init", map[string]targettest.File{"README.md": {Data: "# reports\n"}})
		return tgt, insp
	}, Skip: skipUnlessLong("BigFile", "ManyFiles")})
}

func skipUnlessLong(names ...string) []string {
	if longTests {
		return nil
	}
	return names
}

// TestGitHubReal runs the suite against github.com, on a branch of its
// own that it deletes afterwards.
func TestGitHubReal(t *testing.T) {
	repo := os.Getenv("AIRLOCK_GITHUB_TEST_REPO")
	if repo == "" {
		t.Skip("set AIRLOCK_GITHUB_TEST_REPO=OWNER/REPO (a scratch repository with at least one commit) and GITHUB_TOKEN to run the suite against github.com")
	}
	token, err := github.ResolveToken(context.Background())
	if err != nil {
		t.Skipf("AIRLOCK_GITHUB_TEST_REPO is set but %v", err)
	}
	runAPIHarness(t, "https://api.github.com/", "https://github.com/", token, repo)
}

// The harness of TestGitHubReal, run against the emulator, so that it is
// known to work before anyone points it at github.com.
func TestGitHubEmulatedThroughAPI(t *testing.T) {
	t.Parallel() // long and independent: alongside the others, the package stays well within Go's default timeout
	emu, err := githubemu.New(t.TempDir(), "octo-org", "reports", emuToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	(&gitInspector{dir: emu.Dir()}).Commit(t, "init", map[string]targettest.File{"README.md": {Data: "# reports\n"}})
	runAPIHarness(t, emu.URL, emu.GitURL, emuToken, "octo-org/reports")
}

// runAPIHarness runs the suite with an inspector that sees the repository
// only through GitHub's API and git over HTTPS, as a person would.
func runAPIHarness(t *testing.T, apiURL, gitURL, token, repo string) {
	branch := fmt.Sprintf("airlock-suite-%d", time.Now().UnixNano())
	owner, name, _ := strings.Cut(repo, "/")
	c, err := gogithub.NewClient(gogithub.WithAuthToken(token), gogithub.WithURLs(new(apiURL), nil))
	if err != nil {
		t.Fatal(err)
	}
	insp := &apiInspector{c: c, owner: owner, repo: name, token: token, gitURL: strings.TrimSuffix(gitURL, "/") + "/" + repo + ".git"}
	targettest.Run(t, targettest.Harness{Branch: branch, Short: true, New: func(t *testing.T) (targets.Target, targettest.Inspector) {
		clean := func() { insp.deleteBranch(branch); insp.deleteBranch(branch + "-fork") }
		clean()
		t.Cleanup(clean)
		tgt, err := github.Open(context.Background(), repo, targets.GitHubOptions{APIURL: apiURL, GitURL: gitURL, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return tgt, insp
	}})
}

type apiInspector struct {
	c             *gogithub.Client
	owner, repo   string
	token, gitURL string
}

func (a *apiInspector) deleteBranch(branch string) {
	a.c.Git.DeleteRef(context.Background(), a.owner, a.repo, "heads/"+branch)
}

func (a *apiInspector) Head(t testing.TB, branch string) plumbing.Hash {
	r, resp, err := a.c.Git.GetRef(context.Background(), a.owner, a.repo, "heads/"+branch)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return plumbing.ZeroHash
	}
	if err != nil {
		t.Fatalf("reading %s: %v", branch, err)
	}
	return plumbing.NewHash(r.GetObject().GetSHA())
}

func (a *apiInspector) Commit(t testing.TB, branch string, files map[string]targettest.File) plumbing.Hash {
	t.Helper()
	ctx := context.Background()
	var entries []*gogithub.TreeEntry
	for p, f := range files {
		mode := "100644"
		switch {
		case f.Symlink:
			mode = "120000"
		case f.Executable:
			mode = "100755"
		}
		entries = append(entries, &gogithub.TreeEntry{Path: new(p), Mode: new(mode), Type: new("blob"), Content: new(f.Data)})
	}
	tree, _, err := a.c.Git.CreateTree(ctx, a.owner, a.repo, "", entries)
	if err != nil {
		t.Fatalf("creating a tree: %v", err)
	}
	old := a.Head(t, branch)
	in := gogithub.Commit{Message: new("commit by someone else"), Tree: tree}
	if !old.IsZero() {
		in.Parents = []*gogithub.Commit{{SHA: new(old.String())}}
	}
	c, _, err := a.c.Git.CreateCommit(ctx, a.owner, a.repo, in, nil)
	if err != nil {
		t.Fatalf("creating a commit: %v", err)
	}
	if old.IsZero() {
		_, _, err = a.c.Git.CreateRef(ctx, a.owner, a.repo, gogithub.CreateRef{Ref: "refs/heads/" + branch, SHA: c.GetSHA()})
	} else {
		_, _, err = a.c.Git.UpdateRef(ctx, a.owner, a.repo, "refs/heads/"+branch, gogithub.UpdateRef{SHA: c.GetSHA(), Force: new(true)})
	}
	if err != nil {
		t.Fatalf("moving %s: %v", branch, err)
	}
	return plumbing.NewHash(c.GetSHA())
}

func (a *apiInspector) Tree(t testing.TB, commit plumbing.Hash) map[string]targettest.File {
	t.Helper()
	ctx := context.Background()
	c, _, err := a.c.Git.GetCommit(ctx, a.owner, a.repo, commit.String())
	if err != nil {
		t.Fatalf("reading commit %s: %v", commit, err)
	}
	tree, _, err := a.c.Git.GetTree(ctx, a.owner, a.repo, c.GetTree().GetSHA(), true)
	if err != nil || tree.GetTruncated() {
		t.Fatalf("reading tree: %v (truncated %v)", err, tree.GetTruncated())
	}
	out := map[string]targettest.File{}
	for _, e := range tree.Entries {
		if e.GetType() != "blob" {
			continue
		}
		data, _, err := a.c.Git.GetBlobRaw(ctx, a.owner, a.repo, e.GetSHA())
		if err != nil {
			t.Fatalf("reading %s: %v", e.GetPath(), err)
		}
		out[e.GetPath()] = targettest.File{Data: string(data), Executable: e.GetMode() == "100755", Symlink: e.GetMode() == "120000"}
	}
	return out
}

// Fsck clones the repository over HTTPS (the token in the environment,
// never on a command line) and runs git fsck --strict on the clone.
func (a *apiInspector) Fsck(t testing.TB) {
	t.Helper()
	dir := t.TempDir()
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + a.token))
	env := []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Basic " + basic, "GIT_TERMINAL_PROMPT=0"}
	run(t, dir, nil, env, "clone", "-q", "--bare", a.gitURL, "repo.git")
	run(t, filepath.Join(dir, "repo.git"), nil, nil, "fsck", "--strict", "--no-dangling")
}

// oneChange is a sandbox with one staged commit on top of the branch.
type oneChange struct {
	store  *staging.Store
	commit plumbing.Hash
	old    plumbing.Hash
	grant  approval.Grant
}

func stageOne(t *testing.T, tgt targets.Target, ref string, files map[string]string) oneChange {
	t.Helper()
	ctx := context.Background()
	ws, err := memfs.New()
	if err != nil {
		t.Fatal(err)
	}
	store := staging.NewStore(1 << 30)
	area, err := staging.New(ws, store, staging.Config{Author: staging.Signature{Name: "Emu Worker", Email: "emu@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	old, err := tgt.Head(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !old.IsZero() {
		head, err := tgt.Fetch(ctx, ref, nil, store)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := area.SeedFrom(head, nil); err != nil {
			t.Fatal(err)
		}
	}
	for p, d := range files {
		if err := ws.WriteFile(p, []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := area.Stage(nil, "one change")
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	gate := approval.NewGate(l, approval.Policy{AutoApprove: []string{tgt.ID()}})
	tk, err := gate.Submit(&approval.Request{Worker: "emu", Target: tgt.ID(), Ref: ref, Old: old, New: c.ID, Tree: c.ID, NewRef: old.IsZero()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, g, err := tk.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return oneChange{store, c.ID, old, g}
}

func TestGitHubEmptyRepository(t *testing.T) {
	tgt, _, insp, _ := emulated(t, targets.GitHubOptions{})
	ch := stageOne(t, tgt, "refs/heads/main", map[string]string{"a.txt": "a\n"})
	err := tgt.Push(context.Background(), ch.grant, ch.store)
	if !errors.Is(err, github.ErrEmptyRepository) {
		t.Fatalf("push to an empty repository: %v, want ErrEmptyRepository", err)
	}
	for _, want := range []string{"empty", "first commit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	if h := insp.Head(t, "main"); !h.IsZero() {
		t.Errorf("main is at %s", h)
	}
	if _, err := tgt.Fetch(context.Background(), "main", nil, staging.NewStore(1<<20)); !errors.Is(err, targets.ErrRefNotFound) {
		t.Errorf("fetch from an empty repository: %v, want ErrRefNotFound", err)
	}
}

// Faults GitHub produces: each push still lands exactly once, with the
// staged SHA, having waited what GitHub asked.
func TestGitHubFaults(t *testing.T) {
	cases := []struct {
		name      string
		faults    []githubemu.Fault
		wantWaits []time.Duration // exact waits; nil: any
		calls     map[string]int  // requests that reached the emulator
	}{
		{
			name:      "secondary rate limit 403 with Retry-After",
			faults:    []githubemu.Fault{{Method: "POST", Path: "/git/trees", Status: 403, RetryAfter: "7"}},
			wantWaits: []time.Duration{7 * time.Second},
			calls:     map[string]int{"POST /git/trees": 2, "POST /git/commits": 1, "POST /git/blobs": 1}, // text inline, binary as a blob
		},
		{
			name:      "429 with Retry-After, twice",
			faults:    []githubemu.Fault{{Method: "POST", Path: "/git/commits", Status: 429, RetryAfter: "3", Times: 2}},
			wantWaits: []time.Duration{3 * time.Second, 3 * time.Second},
			calls:     map[string]int{"POST /git/commits": 3},
		},
		{
			name:   "502 then success",
			faults: []githubemu.Fault{{Method: "PATCH", Path: "/git/refs/heads/main", Status: 502}},
			calls:  map[string]int{"PATCH /git/refs/heads/main": 2, "POST /git/commits": 1},
		},
		{
			name:   "connection dropped after the commit was made",
			faults: []githubemu.Fault{{Method: "POST", Path: "/git/commits", Drop: true}},
			calls:  map[string]int{"POST /git/commits": 2, "PATCH /git/refs/heads/main": 1},
		},
		{
			name:   "connection dropped after the ref moved",
			faults: []githubemu.Fault{{Method: "PATCH", Path: "/git/refs/heads/main", Drop: true}},
			calls:  map[string]int{"POST /git/commits": 1, "PATCH /git/refs/heads/main": 2},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tgt, emu, insp, w := emulated(t, targets.GitHubOptions{})
			insp.Commit(t, "main", map[string]targettest.File{"README.md": {Data: "# r\n"}})
			before := strings.Fields(run(t, insp.dir, nil, nil, "rev-list", "--all"))
			ch := stageOne(t, tgt, "refs/heads/main", map[string]string{"report.md": "# Q3\n", "img.bin": "\x00\x01\x02"})
			for _, f := range c.faults {
				emu.Inject(f)
			}
			if err := tgt.Push(context.Background(), ch.grant, ch.store); err != nil {
				t.Fatalf("push: %v", err)
			}
			if h := insp.Head(t, "main"); h != ch.commit {
				t.Fatalf("main at %s, want the staged %s", h, ch.commit)
			}
			after := strings.Fields(run(t, insp.dir, nil, nil, "rev-list", "--all"))
			if len(after) != len(before)+1 {
				t.Errorf("%d commits reachable after the push, want %d", len(after), len(before)+1)
			}
			if refs := run(t, insp.dir, nil, nil, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main\n" {
				t.Errorf("refs after the push: %q", refs)
			}
			insp.Fsck(t)
			if c.wantWaits != nil {
				got := w.all()
				if len(got) != len(c.wantWaits) {
					t.Fatalf("waited %v, want %v", got, c.wantWaits)
				}
				for i := range got {
					if got[i] != c.wantWaits[i] {
						t.Errorf("wait %d: %v, want %v (Retry-After)", i, got[i], c.wantWaits[i])
					}
				}
			}
			for k, n := range c.calls {
				method, suffix, _ := strings.Cut(k, " ")
				if got := emu.Calls(method, suffix); got != n {
					t.Errorf("%s: %d requests, want %d", k, got, n)
				}
			}
		})
	}
}

// A new branch whose creation answer is lost: the retry finds the branch
// there, at the staged commit, and reports success; one ref exists.
func TestGitHubCreateRefDropped(t *testing.T) {
	tgt, emu, insp, _ := emulated(t, targets.GitHubOptions{})
	insp.Commit(t, "main", map[string]targettest.File{"README.md": {Data: "# r\n"}})
	ch := stageOne(t, tgt, "refs/heads/feature", map[string]string{"f.txt": "f\n"})
	emu.Inject(githubemu.Fault{Method: "POST", Path: "/git/refs", Drop: true})
	if err := tgt.Push(context.Background(), ch.grant, ch.store); err != nil {
		t.Fatalf("push: %v", err)
	}
	if got := emu.Calls("POST", "/git/refs"); got != 2 {
		t.Errorf("%d ref creations, want 2 (one lost, one retried)", got)
	}
	if h := insp.Head(t, "feature"); h != ch.commit {
		t.Fatalf("feature at %s, want %s", h, ch.commit)
	}
	if refs := run(t, insp.dir, nil, nil, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/feature\nrefs/heads/main\n" {
		t.Errorf("refs: %q", refs)
	}
}

// Faults that must not be retried into success: a 422 non-fast-forward is
// the target moved; a rate limit asking for more than MaxWait fails at
// once and says when to try again; persistent 502s give up.
func TestGitHubFaultsThatFail(t *testing.T) {
	t.Run("422 non-fast-forward", func(t *testing.T) {
		tgt, emu, insp, _ := emulated(t, targets.GitHubOptions{})
		insp.Commit(t, "main", map[string]targettest.File{"README.md": {Data: "# r\n"}})
		ch := stageOne(t, tgt, "refs/heads/main", map[string]string{"x.txt": "x\n"})
		// Someone pushes between the target's check and its ref update:
		// the emulator answers the update with 422, as GitHub would.
		emu.Inject(githubemu.Fault{Method: "POST", Path: "/git/commits", Drop: true})
		other := insp.Commit(t, "main", map[string]targettest.File{"README.md": {Data: "# theirs\n"}})
		err := tgt.Push(context.Background(), ch.grant, ch.store)
		if !errors.Is(err, targets.ErrTargetMoved) {
			t.Fatalf("push: %v, want ErrTargetMoved", err)
		}
		if h := insp.Head(t, "main"); h != other {
			t.Fatalf("main moved to %s", h)
		}
	})
	t.Run("422 from the ref update itself", func(t *testing.T) {
		tgt, emu, insp, _ := emulated(t, targets.GitHubOptions{})
		base := insp.Commit(t, "main", map[string]targettest.File{"README.md": {Data: "# r\n"}})
		ch := stageOne(t, tgt, "refs/heads/main", map[string]string{"x.txt": "x\n"})
		emu.Inject(githubemu.Fault{Method: "PATCH", Path: "/git/refs/heads/main", Status: 422})
		err := tgt.Push(context.Background(), ch.grant, ch.store)
		if err == nil || !strings.Contains(err.Error(), "422") {
			t.Fatalf("push: %v, want the 422 reported", err)
		}
		if got := emu.Calls("PATCH", "/git/refs/heads/main"); got != 1 {
			t.Errorf("a 422 was retried: %d updates", got)
		}
		if h := insp.Head(t, "main"); h != base {
			t.Fatalf("main moved to %s", h)
		}
	})
	t.Run("rate limit longer than MaxWait", func(t *testing.T) {
		tgt, emu, insp, w := emulated(t, targets.GitHubOptions{MaxWait: time.Minute})
		base := insp.Commit(t, "main", map[string]targettest.File{"README.md": {Data: "# r\n"}})
		ch := stageOne(t, tgt, "refs/heads/main", map[string]string{"x.txt": "x\n"})
		emu.Inject(githubemu.Fault{Method: "POST", Path: "/git/trees", Status: 429, RetryAfter: "3600"})
		err := tgt.Push(context.Background(), ch.grant, ch.store)
		var rl *targets.RateLimitedError
		if !errors.As(err, &rl) || rl.Wait != time.Hour {
			t.Fatalf("push: %v, want a RateLimitedError of 1h", err)
		}
		if len(w.all()) != 0 {
			t.Errorf("waited %v", w.all())
		}
		if h := insp.Head(t, "main"); h != base {
			t.Fatalf("main moved to %s", h)
		}
	})
	t.Run("502 forever", func(t *testing.T) {
		tgt, emu, insp, w := emulated(t, targets.GitHubOptions{Retries: 3})
		base := insp.Commit(t, "main", map[string]targettest.File{"README.md": {Data: "# r\n"}})
		ch := stageOne(t, tgt, "refs/heads/main", map[string]string{"x.txt": "x\n"})
		emu.Inject(githubemu.Fault{Method: "POST", Path: "/git/commits", Status: 502, Times: 100})
		err := tgt.Push(context.Background(), ch.grant, ch.store)
		if err == nil || !strings.Contains(err.Error(), "502") {
			t.Fatalf("push: %v, want a 502 reported", err)
		}
		if got := emu.Calls("POST", "/git/commits"); got != 4 {
			t.Errorf("%d attempts, want 4 (1 + 3 retries)", got)
		}
		if n := len(w.all()); n != 3 {
			t.Errorf("%d waits, want 3", n)
		}
		if h := insp.Head(t, "main"); h != base {
			t.Fatalf("main moved to %s", h)
		}
	})
}

// The token never shows in errors, even when GitHub refuses it.
func TestGitHubTokenNeverInErrors(t *testing.T) {
	emu, err := githubemu.New(t.TempDir(), "octo-org", "reports", emuToken)
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	wrong := "ghp_wrongTOKENwrongTOKENwrongTOKEN00000"
	tgt, err := github.Open(context.Background(), "octo-org/reports", targets.GitHubOptions{APIURL: emu.URL, GitURL: emu.GitURL, Token: wrong})
	if err != nil {
		t.Fatal(err)
	}
	_, herr := tgt.Head(context.Background(), "main")
	_, ferr := tgt.Fetch(context.Background(), "main", nil, staging.NewStore(1<<20))
	for _, err := range []error{herr, ferr} {
		if err == nil {
			t.Fatal("a wrong token was accepted")
		}
		if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), emuToken) {
			t.Errorf("the token is in the error: %v", err)
		}
		if !strings.Contains(err.Error(), "token") {
			t.Errorf("the error does not say the token was refused: %v", err)
		}
	}
}

// A malformed API address is refused when the target is opened, naming it.
func TestGitHubBadAPIURL(t *testing.T) {
	for _, bad := range []string{"http://[::1", "http://exa mple.com/", "%zz"} {
		_, err := github.Open(context.Background(), "octo-org/reports", targets.GitHubOptions{APIURL: bad, Token: emuToken})
		if err == nil || !strings.Contains(err.Error(), "GitHub API URL") || !strings.Contains(err.Error(), bad) {
			t.Errorf("APIURL %q: got %v, want an error naming the URL", bad, err)
		}
	}
}

func TestGitHubTokenResolution(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no gh
	t.Setenv("GITHUB_TOKEN", "")
	t.Setenv("GH_TOKEN", "")
	if _, err := github.ResolveToken(context.Background()); !errors.Is(err, github.ErrNoToken) {
		t.Fatalf("no token anywhere: %v", err)
	}
	t.Setenv("GH_TOKEN", "from-gh-token")
	if tok, _ := github.ResolveToken(context.Background()); tok != "from-gh-token" {
		t.Errorf("GH_TOKEN: got %q", tok)
	}
	t.Setenv("GITHUB_TOKEN", "from-github-token")
	if tok, _ := github.ResolveToken(context.Background()); tok != "from-github-token" {
		t.Errorf("GITHUB_TOKEN comes first: got %q", tok)
	}
	// gh auth token, when neither variable is set.
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "gh"), []byte("#!/bin/sh\n[ \"$1 $2\" = 'auth token' ] && echo from-gh-cli\n"), 0o755)
	t.Setenv("PATH", bin)
	t.Setenv("GITHUB_TOKEN", "")
	t.Setenv("GH_TOKEN", "")
	if tok, _ := github.ResolveToken(context.Background()); tok != "from-gh-cli" {
		t.Errorf("gh auth token: got %q", tok)
	}
}

func TestGitHubBadNames(t *testing.T) {
	for _, name := range []string{"", "owner", "owner/", "/repo", "a/b/c", "own er/repo", "owner/re po", "-owner/repo", "owner/..", "owner/repo?x=1"} {
		if _, err := github.Open(context.Background(), name, targets.GitHubOptions{Token: "t"}); err == nil {
			t.Errorf("%q was accepted", name)
		} else if !strings.Contains(err.Error(), "OWNER/REPO") {
			t.Errorf("%q: the error does not say the form: %v", name, err)
		}
	}
}

func TestGitHubPullRequestAndDefaultBranch(t *testing.T) {
	tgt, emu, insp, _ := emulated(t, targets.GitHubOptions{})
	insp.Commit(t, "main", map[string]targettest.File{"README.md": {Data: "# r\n"}})
	ch := stageOne(t, tgt, "refs/heads/report", map[string]string{"q3.md": "# Q3\n"})
	if err := tgt.Push(context.Background(), ch.grant, ch.store); err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.Fetch(context.Background(), "no-such-branch", nil, staging.NewStore(1<<20)); !errors.Is(err, targets.ErrRefNotFound) {
		t.Errorf("fetch of a branch that does not exist: %v, want ErrRefNotFound", err)
	}
	def, err := tgt.DefaultBranch(context.Background())
	if err != nil || def != "main" {
		t.Fatalf("default branch %q, %v", def, err)
	}
	var pr targets.PullRequester = tgt
	url, err := pr.OpenPullRequest(context.Background(), "refs/heads/report", def, "Add the Q3 report", "From airlock.")
	if err != nil {
		t.Fatal(err)
	}
	prs := emu.PullRequests()
	if len(prs) != 1 || prs[0].Head != "report" || prs[0].Base != "main" || prs[0].HeadSHA != ch.commit.String() || url != prs[0].HTMLURL {
		t.Fatalf("pull requests %+v, url %q", prs, url)
	}
	if !strings.HasPrefix(url, "http") {
		t.Errorf("url %q", url)
	}
}
