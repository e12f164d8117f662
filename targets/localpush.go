package targets

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/gitdir"
	"github.com/airlock-dev/airlock/targets/internal/transfer"
	"github.com/airlock-dev/airlock/targets/internal/worktree"
	"github.com/go-git/go-git/v5/plumbing"
)

// Push sends the granted commit and moves the ref.
func (l *Local) Push(ctx context.Context, g approval.Grant, store *staging.Store) error {
	if !g.Valid() {
		return approval.ErrNoGrant
	}
	if g.Target() != l.ID() {
		return g.Check(l.ID(), g.Ref(), g.Old(), g.New())
	}
	if _, err := BranchRef(g.Ref()); err != nil {
		return err
	}
	if err := l.notSymbolic(g.Ref()); err != nil {
		return err
	}
	if !l.bare {
		wt, err := l.checkedOutIn(ctx, g.Ref())
		if err != nil {
			return err
		}
		if wt != "" {
			return l.pushCheckedOut(ctx, wt, g, store)
		}
	}
	_, lock, unlock, err := l.pushLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return l.receivePack(ctx, g.Ref(), g, store, true, plumbing.ZeroHash, lock)
}

// receivePack pushes g.New to ref through git-receive-pack. With check,
// the grant is checked against the ref, which must be at g.Old; without,
// ref is a temporary ref of airlock's own, only the objects matter, and
// have is a commit the repository already holds. git-receive-pack holds
// lock (see pushLock).
func (l *Local) receivePack(ctx context.Context, ref string, g approval.Grant, store *staging.Store, check bool, have plumbing.Hash, lock *os.File) error {
	cur, err := l.Head(ctx, ref)
	if err != nil {
		return err
	}
	if check {
		if done, err := Admit(l.ID(), ref, g, cur); done || err != nil {
			return err
		}
		have = cur
	}
	if have.IsZero() {
		// A new branch: the pack need not carry what the repository
		// already has, and the sandbox may not even hold it (a
		// partial pull).
		repo, err := l.open()
		if err != nil {
			return err
		}
		if have, err = transfer.ForkPoint(store, g.New(), func(h plumbing.Hash) (bool, error) {
			_, err := repo.CommitObject(h)
			return err == nil, nil
		}); err != nil {
			return err
		}
	}
	if err := transfer.CheckOutgoing(store, g.New(), have); err != nil {
		return err
	}
	// Everything the pack needs is listed and checked before git-receive-pack
	// starts: a pack that failed halfway would leave it waiting for the rest.
	objs, err := transfer.ToSend(store, g.New(), have)
	if err != nil {
		return err
	}
	for _, h := range objs {
		// Trees and commits are held; a blob may be read from where a
		// lazy base was pulled (another repository's packs), which
		// must still have it.
		if err := store.HasBlob(h); err != nil {
			return fmt.Errorf("object %s of the push is not in the sandbox, nor in the repository its base was pulled from (%w); pull again (git_pull) and stage the change anew", h, err)
		}
	}
	err = l.runReceivePack(ctx, lock, ref, cur, g.New(), func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		if err := transfer.WritePack(bw, store, objs); err != nil {
			return err
		}
		return bw.Flush()
	})
	var moved *MovedError
	if errors.As(err, &moved) {
		return err
	}
	if err != nil {
		now, herr := l.Head(ctx, ref)
		switch {
		case herr == nil && check && now == g.New():
			// receive-pack failed after the ref moved: the push landed.
			return &LandedError{Ref: ref, Err: err}
		case herr == nil && now != cur && now != g.New():
			return &MovedError{Ref: ref, Expected: g.Old(), Head: now}
		}
		return err
	}
	return nil
}

// CheckedOut reports whether ref is checked out in a working tree of the
// repository, where a push writes files.
func (l *Local) CheckedOut(ctx context.Context, ref string) (bool, error) {
	if l.bare {
		return false, nil
	}
	wt, err := l.checkedOutIn(ctx, ref)
	return wt != "", err
}

// checkedOutIn returns the working tree that has ref checked out, or "".
func (l *Local) checkedOutIn(ctx context.Context, ref string) (string, error) {
	out, err := l.git(ctx, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	var wt string
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "worktree "):
			wt = strings.TrimPrefix(line, "worktree ")
		case line == "branch "+ref:
			return wt, l.ownWorktree(ctx, wt, ref)
		}
	}
	return "", nil
}

// ErrNotOwnWorktree: the repository lists as its worktree a directory
// whose .git belongs to no worktree of it.
var ErrNotOwnWorktree = errors.New("the repository lists a worktree that is not its own")

// ownWorktree refuses wt, which git lists as a worktree of the repository
// with ref checked out, unless wt's .git leads back to the repository's
// common directory. git lists what the repository's worktrees/NAME/gitdir
// says, any directory at all (another project's, say), and a push would
// write its files and index there
// (TestPushWritesNoDirectoryTheRepositoryCallsAWorktree).
func (l *Local) ownWorktree(ctx context.Context, wt, ref string) error {
	common, err := l.commonDir(ctx)
	if err != nil {
		return err
	}
	same := func(a, b string) bool {
		ra, err1 := filepath.EvalSymlinks(a)
		rb, err2 := filepath.EvalSymlinks(b)
		return err1 == nil && err2 == nil && ra == rb
	}
	if _, err := os.Lstat(filepath.Join(wt, ".git")); err == nil {
		if c, ok := gitdir.CommonDir(wt); ok && same(c, common) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s says %s has %s checked out, but that directory's .git is not this repository's, "+
		"so airlock writes no file there: if it is a worktree of this repository, run `git -C %s worktree repair %s`; "+
		"if not, remove its entry from %s",
		ErrNotOwnWorktree, l.ID(), termsafe.Text(wt), BranchName(ref), termsafe.Text(l.path), termsafe.Text(wt), termsafe.Text(filepath.Join(common, "worktrees")))
}

// pushLock holds airlock's lock on the repository (across processes)
// until the returned function is called. The git processes that move a
// ref under it are started holding it too (gitHolding, runReceivePack):
// when airlock is killed mid-push, its git-receive-pack or update-ref goes
// on to its end, and the lock stays held until then, so whoever takes it
// next (Recover, when the target is opened again) sees the ref as that
// push left it, not as it was a moment before it moved. unlock releases
// it for them too: they have exited by then.
func (l *Local) pushLock(ctx context.Context) (dir string, lock *os.File, unlock func(), err error) {
	common, err := l.commonDir(ctx)
	if err != nil {
		return "", nil, nil, err
	}
	dir = filepath.Join(common, "airlock")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, nil, err
	}
	if err := noLinks(dir); err != nil {
		return "", nil, nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "push.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", nil, nil, err
	}
	if err := flock(f); err != nil {
		f.Close()
		return "", nil, nil, err
	}
	return dir, f, func() { unflock(f); f.Close() }, nil
}

// ErrLinkedState: the directory where airlock keeps a push's state in a
// repository, or a file of it, is a symlink.
var ErrLinkedState = errors.New("airlock's state in the repository is a symlink")

// noLinks refuses dir, where a push keeps its lock, journal and temporary
// files, when it or one of them is a symlink: the repository would have
// airlock write them, the pushed files among them, wherever it points
// (TestPushWritesNothingThroughALinkedStateDirectory).
func noLinks(dir string) error {
	for _, p := range []string{dir, filepath.Join(dir, "push.lock"), filepath.Join(dir, "push-journal.json"), filepath.Join(dir, "tmp")} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s is a symlink, and airlock writes a push's lock, journal and files only in the "+
				"repository's own git directory: remove it (airlock makes the directory again)", ErrLinkedState, termsafe.Text(p))
		}
	}
	return nil
}

// pushCheckedOut pushes to the branch checked out in worktree wt: objects
// in first, under a temporary ref; then, if no path the push changes has
// uncommitted changes, the journal, the ref (compare-and-swap), the files
// and the index.
func (l *Local) pushCheckedOut(ctx context.Context, wt string, g approval.Grant, store *staging.Store) error {
	dir, lock, unlock, err := l.pushLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := l.recoverLocked(ctx, dir); err != nil {
		// An earlier push's: this one has not started. (Its WorktreeError
		// or KeptError names that push's commit, not this one's.)
		return fmt.Errorf("finishing an earlier, interrupted airlock push to %s first: %w; nothing was pushed this time: push again", l.path, err)
	}
	ref := g.Ref()
	cur, err := l.Head(ctx, ref)
	if err != nil {
		return err
	}
	if done, err := Admit(l.ID(), ref, g, cur); done || err != nil {
		return err
	}
	paths, err := changedPaths(store, cur, g.New())
	if err != nil {
		return err
	}
	for _, p := range paths {
		if _, err := pathguard.CheckPath(p.Path); err != nil {
			return fmt.Errorf("refusing to push: %w: %v", worktree.ErrUnsafePath, err)
		}
	}
	if err := checkClean(ctx, wt, paths); err != nil {
		return err
	}
	// The objects go in through receive-pack too, under a temporary ref
	// nobody else uses, so that git writes them as it writes any push.
	temp := "refs/airlock/incoming/" + g.Request()
	if g.Request() == "" {
		temp = "refs/airlock/incoming/push"
	}
	if err := l.receivePack(ctx, temp, g, store, false, cur, lock); err != nil {
		return err
	}
	j := journal{Ref: ref, Old: cur, New: g.New(), Worktree: wt, TempRef: temp, Paths: paths}
	jpath := filepath.Join(dir, "push-journal.json")
	if err := writeFileSync(jpath, j); err != nil {
		// A temporary ref left behind is removed by the next push.
		_, _ = l.git(ctx, nil, "update-ref", "-d", temp)
		return err
	}
	if _, err := l.gitHolding(ctx, lock, nil, "update-ref", "-m", "airlock: push "+g.Request(), ref, g.New().String(), cur.String()); err != nil {
		// The branch did not move: a journal left behind finds it
		// unmoved and is dropped, a temporary ref is removed by the
		// next push.
		_ = os.Remove(jpath)
		_, _ = l.git(ctx, nil, "update-ref", "-d", temp)
		if now, herr := l.Head(ctx, ref); herr == nil && now != cur {
			return &MovedError{Ref: ref, Expected: cur, Head: now}
		}
		return err
	}
	kept, err := l.rollForward(ctx, dir, j)
	if err != nil {
		return &WorktreeError{Ref: ref, Worktree: wt, Old: cur, New: g.New(), Err: err}
	}
	if len(kept) > 0 {
		// The user edited files of the push while it landed (after
		// checkClean): the push landed, and those stay theirs.
		return &WorktreeError{Ref: ref, Worktree: wt, Old: cur, New: g.New(), Err: newKeptError(j, kept)}
	}
	return nil
}
