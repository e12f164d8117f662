package gitread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/targets/internal/gitenv"
	"github.com/go-git/go-git/v5/plumbing"
)

// A partial clone (git clone --filter=blob:none) holds the blobs it has
// needed so far and fetches the others from its promisor remote when
// something reads them. git never does so for airlock: every git the
// source runs reads the objects through a git directory of airlock's own
// (gitenv.Neutral), which has no promisor remote, so a missing blob is
// reported missing. airlock fetches what it needs itself, in one fetch
// before a pull lists a commit's tree (as git checkout does) and one blob
// at a time for a read that finds one missing, from the URL of the
// repository's promisor remote, with no program the repository's config
// names (its uploadpack, sshCommand, a helper or ext:: transport).

// ErrPromisor: a partial clone lacks blobs airlock could not fetch.
var ErrPromisor = errors.New("the partial clone lacks blobs airlock could not fetch")

// partialClone reports whether the repository has promisor packs: it was
// cloned partially, and some of its objects may be on its promisor
// remote only.
func partialClone(common string) bool {
	ms, _ := filepath.Glob(filepath.Join(common, "objects", "pack", "*.promisor"))
	return len(ms) > 0
}

// FetchMissing fetches, in one fetch, the blobs of commit's tree that a
// partial clone lacks. An error says which could not be had and what to
// do.
func (r *Source) FetchMissing(ctx context.Context, commit plumbing.Hash) error {
	if !partialClone(r.common) {
		return nil
	}
	// --missing=print lists what is missing (nothing is fetched).
	cmd, err := r.gitCtx(ctx, "rev-list", "--objects", "--missing=print", "--no-object-names", commit.String())
	if err != nil {
		return err
	}
	out, err := cmd.Output()
	if err != nil {
		return nil // the listing of the tree says what is wrong with it
	}
	var missing bytes.Buffer
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if id, ok := strings.CutPrefix(line, "?"); ok {
			missing.WriteString(id + "\n")
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if err := r.fetchPromised(ctx, &missing); err != nil {
		return fmt.Errorf("%w: %d objects of %s are not in %s: %w; have git fetch them yourself in the repository "+
			"(git checkout of the branch in a working tree; in a bare one git fetch --refetch --no-filter, as --refetch alone "+
			"fetches again under the same filter and brings no blob), then pull again",
			ErrPromisor, n, commit, termsafe.Text(r.common), err)
	}
	return nil
}

// fetchOne fetches blob h, which a read found missing, and reports
// whether it may now be read.
func (r *Source) fetchOne(h plumbing.Hash) bool {
	if !partialClone(r.common) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return r.fetchPromised(ctx, bytes.NewBufferString(h.String()+"\n")) == nil
}

// fetchPromised fetches the objects ids (one a line) from the partial
// clone's promisor remote, through a git directory of its own
// (gitenv.Neutral.Fetch) that writes the pack into the repository's
// object directory.
func (r *Source) fetchPromised(ctx context.Context, ids *bytes.Buffer) error {
	url, err := r.promisorURL(ctx)
	if err != nil {
		return err
	}
	n, err := gitenv.NewNeutral(r.common)
	if err != nil {
		return err
	}
	// A relative path in the URL starts where git's own lazy fetch runs:
	// the working tree for a repository with one, else its git directory.
	dir := r.common
	if filepath.Base(dir) == ".git" {
		dir = filepath.Dir(dir)
	}
	return n.Fetch(ctx, url, dir, ids)
}

// errNoPromisor: the repository names no promisor remote with a URL.
var errNoPromisor = errors.New("the repository names no promisor remote with a URL")

// promisorURL is the URL of the remote a partial clone promises its
// missing objects from, read from its config (`git config` runs nothing
// the config names).
func (r *Source) promisorURL(ctx context.Context) (string, error) {
	kv, err := gitenv.ReadConfig(ctx, r.common)
	if err != nil {
		return "", err
	}
	partial := ""
	var promisors []string
	urls := map[string]string{}
	for _, e := range kv {
		k, v := e[0], e[1]
		lk := strings.ToLower(k)
		switch {
		case lk == "extensions.partialclone":
			partial = v
		case strings.HasPrefix(lk, "remote.") && strings.HasSuffix(lk, ".promisor") && strings.EqualFold(v, "true"):
			promisors = append(promisors, k[len("remote."):len(k)-len(".promisor")])
		case strings.HasPrefix(lk, "remote.") && strings.HasSuffix(lk, ".url"):
			name := k[len("remote.") : len(k)-len(".url")]
			if _, ok := urls[name]; !ok {
				urls[name] = v // a fetch uses a remote's first URL
			}
		}
	}
	for _, name := range append([]string{partial}, promisors...) {
		if u := urls[name]; name != "" && u != "" {
			return u, nil
		}
	}
	return "", errNoPromisor
}
