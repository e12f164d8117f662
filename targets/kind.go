package targets

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/staging"
)

// A Kind is one kind of target, and everything airlock knows of it in one
// place: how a worker file says where one is, how its id is written, how it
// is opened, how the source of a lazy base pulled from it is opened again
// in another process, and how its ledger head is read. A target's id is
// its kind's name, a colon and where it is: "local:/abs/path",
// "local-bare:/abs/path", "github:owner/repo".
//
// Every place that names a kind (the worker file's parser and check, the
// session's opening of targets, resuming lazy bases, ledger verify) asks
// the registry (KindNamed, SplitID) instead of spelling the kinds out.
type Kind struct {
	// Name is the kind's type in a worker file and its ids' prefix.
	Name string
	// Local: where is a path on this host (a worker file's path key,
	// resolved against the file's directory); otherwise a name (the
	// repo key).
	Local bool
	// Bare: a local kind for a bare repository.
	Bare bool
	// Group is how messages call targets of this kind and its like
	// ("is for local targets").
	Group string
	// Takes says what a worker file gives for one ("path", "repo:
	// owner/name"); Missing is the advice when the file gives none.
	Takes, Missing string
	// Example is where in an example id ("/abs/path"), Placeholder
	// the same as a command line's usage writes it ("PATH").
	Example, Placeholder string
	// Check judges where as a worker file or an id gives it (a local
	// path already made absolute); its error is the worker's message.
	// Nil accepts any.
	Check func(where string) error
	// Open opens the target at where.
	Open func(ctx context.Context, where string, env Env) (Target, error)
	// OpenSource opens the blob source a Fetch from the target at where
	// added to a store (see OpenSourceWith); key is its id.
	OpenSource func(ctx context.Context, key, where string, env Env) (staging.BlobSource, error)
	// OpenLedger opens the target at where only to read the ledger head
	// it keeps (see OpenForLedger).
	OpenLedger func(ctx context.Context, where string, env Env) (LedgerHeadReader, error)
}

// Key is the worker file's key that says where a target of k is.
func (k *Kind) Key() string {
	if k.Local {
		return "path"
	}
	return "repo"
}

// ID is the id of k's target at where.
func (k *Kind) ID(where string) string { return k.Name + ":" + where }

// Env is what the operator's environment says about where kinds reach a
// service. It comes from airlock's environment (Environ), never from a
// worker file, so that a worker cannot redirect where its token goes.
type Env struct {
	// GitHub says where GitHub is: GitHub Enterprise, or an emulator.
	GitHub GitHubOptions
}

// Environ reads Env from the process's environment:
// AIRLOCK_GITHUB_API_URL and AIRLOCK_GITHUB_GIT_URL.
func Environ() Env {
	return Env{GitHub: GitHubOptions{
		APIURL: os.Getenv("AIRLOCK_GITHUB_API_URL"),
		GitURL: os.Getenv("AIRLOCK_GITHUB_GIT_URL"),
	}}
}

// GitHubOptions configures a GitHub target. The zero value talks to
// github.com with a token from the environment.
type GitHubOptions struct {
	// Token authenticates; empty means the token targets/github
	// resolves (ResolveToken).
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

// LedgerHeadReader reads the ledger head a target keeps.
type LedgerHeadReader interface {
	ReadLedgerHead(ctx context.Context, host, path string) (LedgerHead, bool, error)
}

// Kinds lists the kinds airlock knows, in the order messages list them.
func Kinds() []*Kind { return kinds }

// KindNamed returns the kind named name, or nil.
func KindNamed(name string) *Kind {
	for _, k := range kinds {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// LocalKind is the local kind of a working tree, or (bare) of a bare
// repository.
func LocalKind(bare bool) *Kind {
	for _, k := range kinds {
		if k.Local && k.Bare == bare {
			return k
		}
	}
	panic("targets: no local kind")
}

// KindNames lists the kinds' names for a message: "a, b or c".
func KindNames() string {
	return listOr(func(k *Kind) string { return k.Name })
}

// listOr lists something of each kind: "a, b or c".
func listOr(f func(*Kind) string) string {
	var names []string
	for _, k := range kinds {
		names = append(names, f(k))
	}
	last := len(names) - 1
	if last == 0 {
		return names[0]
	}
	return strings.Join(names[:last], ", ") + " or " + names[last]
}

// SplitID cuts id into its kind and where; ok is false when id names no
// kind or nothing after it.
func SplitID(id string) (k *Kind, where string, ok bool) {
	name, where, ok := strings.Cut(id, ":")
	if k = KindNamed(name); !ok || k == nil || where == "" {
		return nil, "", false
	}
	return k, where, true
}

// ParseID checks an id as an operator writes one and returns it as
// targets report theirs: a local path absolute and clean.
func ParseID(id string) (string, error) {
	k, where, ok := SplitID(id)
	switch {
	case !ok:
	case k.Local && filepath.IsAbs(where):
		return k.ID(filepath.Clean(where)), nil
	case !k.Local && (k.Check == nil || k.Check(where) == nil):
		return id, nil
	}
	return "", fmt.Errorf("%q is not a target id: use %s", id, listOr(func(k *Kind) string { return k.ID(k.Example) }))
}

// SameID reports whether two ids name the same target: local paths
// compare by where their symlinks lead.
func SameID(a, b string) bool {
	if a == b {
		return true
	}
	ka, pa, _ := strings.Cut(a, ":")
	kb, pb, _ := strings.Cut(b, ":")
	if k := KindNamed(ka); ka != kb || k == nil || !k.Local {
		return false
	}
	ra, err1 := filepath.EvalSymlinks(pa)
	rb, err2 := filepath.EvalSymlinks(pb)
	return err1 == nil && err2 == nil && ra == rb
}

// Open opens the target of kind name at where.
func Open(ctx context.Context, name, where string, env Env) (Target, error) {
	k := KindNamed(name)
	if k == nil {
		return nil, fmt.Errorf("unknown target type %q", name)
	}
	return k.Open(ctx, where, env)
}

// OpenSource opens the blob source a target's Fetch added to a store
// under key (the target's ID), for a session resumed in another process:
// its lazy files read their content from the same repository (a local
// one's packs, or GitHub's github.com, with a token found as targets/github.Open
// finds one). OpenSourceWith says where GitHub is.
func OpenSource(ctx context.Context, key string) (staging.BlobSource, error) {
	return OpenSourceWith(ctx, key, GitHubOptions{})
}

// OpenSourceWith is OpenSource, with gh for a GitHub key, as a GitHub
// target would be opened.
func OpenSourceWith(ctx context.Context, key string, gh GitHubOptions) (staging.BlobSource, error) {
	k, where, ok := SplitID(key)
	if !ok {
		return nil, fmt.Errorf("no blob source for %q: not a local repository nor one on GitHub", key)
	}
	return k.OpenSource(ctx, key, where, Env{GitHub: gh})
}

// OpenForLedger opens the target id ("local:PATH", "local-bare:PATH",
// "github:OWNER/REPO") only to read the ledger's head it keeps (gh says
// where GitHub is, as Env does): unlike OpenLocal it recovers no
// interrupted push, so reading changes nothing.
func OpenForLedger(ctx context.Context, id string, gh GitHubOptions) (LedgerHeadReader, error) {
	k, where, ok := SplitID(id)
	if !ok {
		return nil, fmt.Errorf("%q is not a target: write %s", id, listOr(func(k *Kind) string { return k.ID(k.Placeholder) }))
	}
	return k.OpenLedger(ctx, where, Env{GitHub: gh})
}
