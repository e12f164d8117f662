package gitread

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/targets/internal/gitenv"
	"github.com/go-git/go-git/v5/plumbing"
)

// A partial clone (git clone --filter=blob:none) holds the blobs it has
// needed so far and fetches the others from its promisor remote when
// something reads them: git fetches each blob it is asked for and lacks
// with a fetch of its own, and `git ls-tree -l` does so for every blob
// whose size it lists. A pull asks for those the repository lacks in one
// fetch before it lists a commit's tree, as git checkout does.

// partialClone reports whether the repository has promisor packs: it was
// cloned partially, and some of its objects may be on its promisor
// remote only.
func partialClone(common string) bool {
	ms, _ := filepath.Glob(filepath.Join(common, "objects", "pack", "*.promisor"))
	return len(ms) > 0
}

// FetchMissing fetches, in one fetch, the blobs of commit's tree that a
// partial clone lacks. Best effort: git fetches what it missed when it is
// read.
func FetchMissing(ctx context.Context, common string, commit plumbing.Hash) {
	if !partialClone(common) {
		return
	}
	// --missing=print lists what is missing rather than fetching it.
	out, err := gitIn(ctx, common, "rev-list", "--objects", "--missing=print", "--no-object-names", commit.String()).Output()
	if err != nil {
		return
	}
	var missing bytes.Buffer
	for _, line := range strings.Split(string(out), "\n") {
		if id, ok := strings.CutPrefix(line, "?"); ok {
			missing.WriteString(id + "\n")
		}
	}
	fetchPromised(ctx, common, &missing)
}

// fetchPromised fetches the objects ids (one a line) from the partial
// clone's promisor remote, as git itself does for a missing object
// (promisor-remote.c): no negotiation, no tags, no ref written.
func fetchPromised(ctx context.Context, common string, ids *bytes.Buffer) {
	if ids.Len() == 0 {
		return
	}
	remote := promisorRemote(ctx, common)
	if remote == "" {
		return
	}
	fetch := gitIn(ctx, common, "-c", "fetch.negotiationAlgorithm=noop", "fetch", remote,
		"--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "--stdin")
	fetch.Stdin = ids
	fetch.Run()
}

// promisorRemote is the name of the remote a partial clone promises its
// missing objects from.
func promisorRemote(ctx context.Context, common string) string {
	out, err := gitIn(ctx, common, "config", "--get-regexp", `^(extensions\.partialclone|remote\..*\.promisor)$`).Output()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch {
		case k == "extensions.partialclone" && v != "":
			return v
		case strings.HasPrefix(k, "remote.") && strings.HasSuffix(k, ".promisor") && v == "true":
			return strings.TrimSuffix(strings.TrimPrefix(k, "remote."), ".promisor")
		}
	}
	return ""
}

// gitIn is git on the repository whose git directory is gitDir, with a
// clean environment.
func gitIn(ctx context.Context, gitDir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir=" + gitDir}, args...)...)
	cmd.Env = gitenv.Clean()
	return cmd
}
