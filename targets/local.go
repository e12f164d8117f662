package targets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/gitdir"
	"github.com/airlock-dev/airlock/targets/internal/gitenv"
	"github.com/airlock-dev/airlock/targets/internal/gitread"
	"github.com/airlock-dev/airlock/targets/internal/transfer"
)

// Local is a repository on this machine: a working-tree repository
// ("local:PATH") or a bare one ("local-bare:PATH").
//
// Pushes go through git-receive-pack, as `git push` to a path does, so
// the ref update takes git's own lock and compares against the approved
// old commit: a git process writing at the same moment is coordinated
// with. No hook of the repository's runs (nor any program its config
// names: gitenv.Keys): the push is airlock's, its checks are the review
// and git's fsck. A push to the branch checked out in a
// working tree also updates its files and index, path by path, and only
// when none of the paths it changes has uncommitted changes; it is
// journaled, so that an interrupted push is completed (or undone, if the
// ref never moved) the next time the target is opened. Completing it never
// writes over the user's work: a path the user changed since is left as
// it is and named (KeptError).
type Local struct {
	path string // absolute path of the repository (the working tree, or the bare repo)
	bare bool
	// gitDir and common are its git directory and common git directory,
	// when read from git's layout at open ("": ask git).
	gitDir, common string

	srcMu sync.Mutex
	src   *gitread.Source // blobs read in place for lazy bases; made by the first Fetch
}

// OpenLocal opens a working-tree repository at path, recovering a push
// that was interrupted there first (Recover). When recovery kept the
// user's edits, the *KeptError saying so is the error, once: the recovery
// is complete, and the next open goes ahead. It is the one place the
// person who starts airlock is sure to see it.
func OpenLocal(ctx context.Context, path string) (*Local, error) {
	return openLocal(ctx, path, false)
}

// OpenLocalBare opens a bare repository at path.
func OpenLocalBare(ctx context.Context, path string) (*Local, error) {
	return openLocal(ctx, path, true)
}

func openLocal(ctx context.Context, path string, bare bool) (*Local, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	l := &Local{path: abs, bare: bare}
	isBare := false
	p, err := gitdir.ProbeLocal(abs)
	if errors.Is(err, gitdir.ErrSpecialFile) {
		return nil, err // git would wait on it too
	}
	if err == nil {
		// git's layout, read from its files: no git process for it.
		isBare, l.path, l.gitDir = p.Bare, p.Path, p.GitDir
		l.common, _ = gitdir.CommonDir(l.path)
	} else {
		// A layout the probe does not read: git says.
		out, err := l.git(ctx, nil, "rev-parse", "--is-bare-repository")
		if err != nil {
			return nil, fmt.Errorf("%s is not a git repository: %w", abs, err)
		}
		if isBare = strings.TrimSpace(string(out)) == "true"; !isBare {
			top, err := l.git(ctx, nil, "rev-parse", "--show-toplevel")
			if err != nil {
				return nil, err
			}
			if t := strings.TrimSpace(string(top)); t != "" {
				l.path = t
			}
		}
	}
	switch {
	case bare && !isBare:
		return nil, fmt.Errorf("%s is a working-tree repository; use the \"local\" target type for it", abs)
	case !bare && isBare:
		return nil, fmt.Errorf("%s is a bare repository; use the \"local-bare\" target type for it", abs)
	}
	if err := l.Recover(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Local) ID() string {
	if l.bare {
		return "local-bare:" + l.path
	}
	return "local:" + l.path
}

func (l *Local) Describe() string { return l.ID() }

// git runs git on the repository with a clean environment and a
// configuration of airlock's (gitenv.Command): no GIT_DIR or similar from
// ours can redirect it, and no program the repository's config names
// (hooks included) runs.
func (l *Local) git(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	return l.gitHolding(ctx, nil, stdin, args...)
}

// gitHolding runs git holding lock too (see pushLock), when it is not nil.
func (l *Local) gitHolding(ctx context.Context, lock *os.File, stdin io.Reader, args ...string) ([]byte, error) {
	cmd, err := gitenv.Command(ctx, l.path, args...)
	if err != nil {
		return nil, err
	}
	inheritLock(cmd, lock)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		name := args[0]
		for _, a := range args {
			if !strings.HasPrefix(a, "-") { // the command, after git's own options
				name = a
				break
			}
		}
		return out, fmt.Errorf("git %s: %s", name, msg)
	}
	return out, nil
}

func (l *Local) open() (*git.Repository, error) {
	return git.PlainOpenWithOptions(l.path, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
}

// Head reads the ref from the repository's own files.
func (l *Local) Head(ctx context.Context, ref string) (plumbing.Hash, error) {
	r, err := l.open()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ref2, err := r.Reference(plumbing.ReferenceName(ref), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return ref2.Hash(), nil
}

// notSymbolic refuses a push to ref when the repository holds it as a
// symbolic ref: git (update-ref, receive-pack) would move the branch it
// names, which the approval was not for.
func (l *Local) notSymbolic(ref string) error {
	r, err := l.open()
	if err != nil {
		return err
	}
	rf, err := r.Reference(plumbing.ReferenceName(ref), false)
	if err != nil || rf.Type() != plumbing.SymbolicReference {
		return nil // not there (a new branch), or unreadable: the push itself says so
	}
	return fmt.Errorf("%w: %s in %s points to %s, which a push there would move without its own approval: "+
		"push to %s itself, or have the repository's owner remove the symbolic ref (git symbolic-ref --delete %s)",
		ErrSymbolicBranch, ref, l.ID(), rf.Target(), rf.Target().Short(), ref)
}

// DefaultBranch is the branch HEAD names, read from the HEAD file where
// the repository's layout is known.
func (l *Local) DefaultBranch(ctx context.Context) (string, error) {
	if l.gitDir != "" {
		p, err := gitdir.ProbeHead(&gitdir.Probe{GitDir: l.gitDir})
		if err != nil {
			return "", err
		}
		if p.Head == "" {
			return "", fmt.Errorf("the HEAD of %s is detached (at %s): it names no branch", l.path, shortid.Hash(p.Detached))
		}
		return strings.TrimPrefix(p.Head, "refs/heads/"), nil
	}
	out, err := l.git(ctx, nil, "symbolic-ref", "--short", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Fetch reads the repository's object database directly: the commit and
// all its trees are copied into the store, and the store reads blobs from
// the repository in place when they are first needed (a lazy base: see
// staging.BlobSource). Only the blobs the tree check reads (.gitmodules
// and the like) are copied now.
func (l *Local) Fetch(ctx context.Context, ref string, paths []string, store *staging.Store) (plumbing.Hash, error) {
	common, err := l.commonDir(ctx)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	head, err := l.Head(ctx, ref)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if head.IsZero() {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s has no %s", ErrRefNotFound, l.ID(), ref)
	}
	src := l.source(common)
	if err := src.FetchMissing(ctx, head); err != nil {
		return plumbing.ZeroHash, err
	}
	ok, err := src.ListTree(ctx, head, store)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if !ok {
		err := transfer.CopyCommit(ctx, src.Objects(store.Limit()), head, paths, false, store)
		if err != nil {
			return plumbing.ZeroHash, err
		}
	}
	store.AddSource(l.ID(), src)
	return head, nil
}

// source returns the repository's blob source, made once.
func (l *Local) source(common string) *gitread.Source {
	l.srcMu.Lock()
	defer l.srcMu.Unlock()
	if l.src == nil {
		l.src = gitread.NewSource(common)
		if !l.bare {
			l.src.ReadWorktree(l.path, l.gitDir)
		}
	}
	return l.src
}

// Close closes what the target holds open: the packs its blob source
// reads. A lazy base read after it cannot load its files.
func (l *Local) Close() error {
	l.srcMu.Lock()
	defer l.srcMu.Unlock()
	if l.src != nil {
		l.src.Close()
		l.src = nil
	}
	return nil
}

func (l *Local) commonDir(ctx context.Context) (string, error) {
	if l.common != "" {
		return l.common, nil
	}
	out, err := l.git(ctx, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
