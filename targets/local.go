package targets

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/durable"
	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
)

// Local is a repository on this machine: a working-tree repository
// ("local:PATH") or a bare one ("local-bare:PATH").
//
// Pushes go through git-receive-pack, as `git push` to a path does, so
// the ref update takes git's own lock and compares against the approved
// old commit: a git process writing at the same moment is coordinated
// with, and receive-pack runs the repository's own hooks as for any push
// (airlock runs none itself). A push to the branch checked out in a
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
	src   *repoSource // blobs read in place for lazy bases; made by the first Fetch
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
	if p, err := ProbeLocal(abs); err == nil {
		// git's layout, read from its files: no git process for it.
		isBare, l.path, l.gitDir = p.Bare, p.Path, p.GitDir
		l.common, _ = commonDirOf(l.path)
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

// git runs git on the repository with a clean environment: no GIT_DIR or
// similar from ours can redirect it.
func (l *Local) git(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	return l.gitHolding(ctx, nil, stdin, args...)
}

// gitHolding runs git holding lock too (see pushLock), when it is not nil.
func (l *Local) gitHolding(ctx context.Context, lock *os.File, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{"-C", l.path}, gitChecks...), args...)...)
	cmd.Env = cleanEnv()
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
		return out, fmt.Errorf("git %s: %s", args[0], msg)
	}
	return out, nil
}

// cleanEnv is our environment without the variables that would make git
// operate on another repository than the one named.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
			"GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
			// Config from the environment could turn git's checks off.
			"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_TERMINAL_PROMPT=0")
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
		p, err := probeHead(&Probe{GitDir: l.gitDir})
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
	fetchMissingOf(ctx, common, head)
	ok, err := l.listTree(ctx, head, store, src)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if !ok {
		err := copyCommit(ctx, catObjects{src.cat, store.Limit()}, head, paths, false, store)
		if err != nil {
			return plumbing.ZeroHash, err
		}
	}
	store.AddSource(l.ID(), src)
	return head, nil
}

// source returns the repository's blob source, made once.
func (l *Local) source(common string) *repoSource {
	l.srcMu.Lock()
	defer l.srcMu.Unlock()
	if l.src == nil {
		l.src = newRepoSource(common)
		if !l.bare {
			l.src.wt = newWorktreeFiles(l.path, l.gitDir)
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

// objectReader is what copyCommit reads objects from: a pack fetched into
// memory, or a repository through git (catObjects). One whose objects'
// sizes can be read without their content (EncodedObjectSize) is asked
// first.
type objectReader interface {
	EncodedObject(plumbing.ObjectType, plumbing.Hash) (plumbing.EncodedObject, error)
}

// copyCommit copies commit head from src into store, with every tree of it
// and, with blobs, the blobs at or under paths (all blobs when paths is
// empty). The blobs the tree check reads are always copied.
func copyCommit(ctx context.Context, src objectReader, head plumbing.Hash, paths []string, blobs bool, store *staging.Store) error {
	copyObj := func(h plumbing.Hash, at string) error {
		if store.HasEncodedObject(h) == nil {
			return nil
		}
		// The declared size is checked before anything is inflated: a
		// small pack may hold one object that inflates to gigabytes. (go-git
		// reads a loose object whole when asked for it, so its size comes
		// from its header first.)
		if sz, ok := src.(interface {
			EncodedObjectSize(plumbing.Hash) (int64, error)
		}); ok {
			if n, err := sz.EncodedObjectSize(h); err == nil {
				if err := store.Room(n); err != nil {
					return fmt.Errorf("%w (object %s at %q): %w; pull fewer paths, or raise the sandbox's limits", ErrObjectTooLarge, shortid.Hash(h), orRoot(at), err)
				}
			}
		}
		o, err := src.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return fmt.Errorf("reading object %s: %w", h, err)
		}
		if err := store.Room(o.Size()); err != nil {
			return fmt.Errorf("%w (%s %s at %q): %w; pull fewer paths, or raise the sandbox's limits", ErrObjectTooLarge, o.Type(), shortid.Hash(h), orRoot(at), err)
		}
		rd, err := o.Reader()
		if err != nil {
			return err
		}
		defer rd.Close()
		data := make([]byte, o.Size())
		if _, err := io.ReadFull(rd, data); err != nil {
			return err
		}
		if o.Type() == plumbing.BlobObject {
			_, err = store.PutBlob(data)
			return err
		}
		m := store.NewEncodedObject()
		m.SetType(o.Type())
		w, _ := m.Writer()
		w.Write(data)
		w.Close()
		_, err = store.SetEncodedObject(m)
		return err
	}
	if err := copyObj(head, ""); err != nil {
		return err
	}
	c, err := object.GetCommit(store, head)
	if err != nil {
		return err
	}
	want := func(p string) bool {
		if !blobs {
			return false
		}
		if len(paths) == 0 {
			return true
		}
		for _, q := range paths {
			q = strings.TrimSuffix(q, "/")
			if q == "" || q == "." || p == q || strings.HasPrefix(p, q+"/") {
				return true
			}
		}
		return false
	}
	var walk func(tree plumbing.Hash, prefix string) error
	walk = func(tree plumbing.Hash, prefix string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(prefix) > pathguard.MaxPathBytes {
			// Nothing this deep can reach the workspace or leave the
			// sandbox (the tree check drops it), so it is not read:
			// a hostile chain of directories costs one path's length.
			return nil
		}
		if err := copyObj(tree, prefix); err != nil {
			return err
		}
		t, err := object.GetTree(store, tree)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			p := e.Name
			if prefix != "" {
				p = prefix + "/" + e.Name
			}
			switch {
			case e.Mode == filemode.Dir:
				if err := walk(e.Hash, p); err != nil {
					return err
				}
			case e.Mode == filemode.Submodule:
			case want(p) || staging.CheckReads(e.Name, e.Mode):
				if err := copyObj(e.Hash, p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(c.TreeHash, ""); err != nil {
		return err
	}
	return nil
}

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
		if done, err := admit(l.ID(), ref, g, cur); done || err != nil {
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
		if have, err = forkPoint(store, g.New(), func(h plumbing.Hash) (bool, error) {
			_, err := repo.CommitObject(h)
			return err == nil, nil
		}); err != nil {
			return err
		}
	}
	if err := checkOutgoing(store, g.New(), have); err != nil {
		return err
	}
	// Everything the pack needs is listed and checked before git-receive-pack
	// starts: a pack that failed halfway would leave it waiting for the rest.
	objs, err := objectsToSend(store, g.New(), have)
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
		if err := writePack(bw, store, objs); err != nil {
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
			return wt, nil
		}
	}
	return "", nil
}

// journal records a push to a checked-out branch while it is under way.
type journal struct {
	Ref      string        `json:"ref"`
	Old      plumbing.Hash `json:"old"`
	New      plumbing.Hash `json:"new"`
	Worktree string        `json:"worktree"`
	TempRef  string        `json:"temp_ref"`
	Paths    []touched     `json:"paths"`
}

type touched struct {
	Path    string            `json:"path"`
	NewMode filemode.FileMode `json:"new_mode"` // zero: deleted
	NewHash plumbing.Hash     `json:"new_hash"`
	OldMode filemode.FileMode `json:"old_mode,omitempty"` // zero: created
	OldHash plumbing.Hash     `json:"old_hash,omitempty"`
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
	if done, err := admit(l.ID(), ref, g, cur); done || err != nil {
		return err
	}
	paths, err := changedPaths(store, cur, g.New())
	if err != nil {
		return err
	}
	for _, p := range paths {
		if _, err := pathguard.CheckPath(p.Path); err != nil {
			return fmt.Errorf("refusing to push: %w: %v", errUnsafePath, err)
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

// rollForward brings the working tree and index to the journal's new
// commit at each of the journal's paths that is as the push left it, then
// clears the journal, and returns the paths it kept. It is idempotent, so
// recovery can run it again after a crash. Files are written by a
// wtWriter: never through a symlink in the tree, never at a path the guard
// refuses, with temporary files in dir/tmp.
//
// A path is as the push left it when the working tree holds there what the
// old commit had (or nothing, where the push creates it) or already what
// the new one has, and the index holds either of the two. Anything else is
// the user's: an edit made after an interrupted push (or while this one
// landed), a directory or a file in the way, something they staged. Such a
// path is kept: its file is not written, and a path that cannot be written
// without touching it (a file under it, or the directory it is in) is kept
// with it. Its index entry is set to the new commit's, unless the user
// staged something there: then `git status` and `git diff` tell the truth
// (the branch, and the index, have the push's version; the working tree
// has the user's, as an unstaged change) and `git commit -a` commits the
// user's version on top of the push's, as it would for any edit. Leaving
// the old entry instead would show the push's change reverted as staged,
// on top of the edit.
func (l *Local) rollForward(ctx context.Context, dir string, j journal) ([]touched, error) {
	r, err := l.open()
	if err != nil {
		return nil, err
	}
	for _, p := range j.Paths {
		if _, err := pathguard.CheckPath(p.Path); err != nil {
			return nil, fmt.Errorf("%w: %v", errUnsafePath, err)
		}
	}
	wtGit := &Local{path: j.Worktree}
	index, err := wtGit.indexEntries(ctx)
	if err != nil {
		return nil, err
	}
	trustMode := wtGit.trustsFileMode(ctx)
	w, err := openWTWriter(j.Worktree, filepath.Join(dir, "tmp"))
	if err != nil {
		return nil, err
	}
	defer w.Close()
	// Removals first, so that a file can take a directory's place.
	sort.SliceStable(j.Paths, func(a, b int) bool { return j.Paths[a].NewMode == 0 && j.Paths[b].NewMode != 0 })
	var kept keptSet
	var entries []touched // index entries to set to the new commit's
	setIndex := func() error {
		if len(entries) == 0 {
			return nil
		}
		var info bytes.Buffer
		for _, p := range entries {
			if p.NewMode == 0 {
				fmt.Fprintf(&info, "0 %s\t%s\x00", plumbing.ZeroHash, p.Path)
			} else {
				fmt.Fprintf(&info, "%o %s\t%s\x00", uint32(p.NewMode), p.NewHash, p.Path)
			}
		}
		if _, err := wtGit.git(ctx, &info, "update-index", "-z", "--index-info"); err != nil {
			return err
		}
		// Refresh stat data so that git status sees the new files as
		// clean; without it, git status refreshes them itself.
		_, _ = wtGit.git(ctx, nil, "update-index", "-q", "--refresh")
		return nil
	}
	for _, p := range j.Paths {
		if err := l.finishPath(r, w, p, index[p.Path], trustMode, &kept, &entries); err != nil {
			// The index follows what was done, so that it is true to the
			// files and `git read-tree -m -u` (the error's advice) can
			// finish from there; the journal stays for the next attempt.
			if ierr := setIndex(); ierr != nil {
				err = errors.Join(err, fmt.Errorf("updating the index: %w", ierr))
			}
			return nil, err
		}
	}
	if err := setIndex(); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(dir, "push-journal.json")); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	_, _ = l.git(ctx, nil, "update-ref", "-d", j.TempRef) // a leftover is removed by the next push
	return kept.paths, nil
}

// finishPath brings path p to the new commit if it is as the push left it
// (see rollForward), or adds it to kept; entries gets the index entries to
// set.
func (l *Local) finishPath(r *git.Repository, w *wtWriter, p touched, idx indexEntry, trustMode bool, kept *keptSet, entries *[]touched) error {
	if !idx.is(p.OldMode, p.OldHash) && !idx.is(p.NewMode, p.NewHash) {
		kept.add(p) // staged by the user: the entry is theirs too
		return nil
	}
	keep := func() error {
		kept.add(p)
		*entries = append(*entries, p)
		return nil
	}
	if kept.nests(p.Path) {
		return keep()
	}
	// Judged just before it is written, not before the loop: a removal
	// before it may have emptied the directory that is in its place.
	st, err := w.stat(p.Path)
	if err != nil {
		return err
	}
	switch {
	case st.holds(p.NewMode, p.NewHash, trustMode):
		// Already there.
	case !st.holds(p.OldMode, p.OldHash, trustMode):
		return keep()
	case p.NewMode == 0:
		// Nothing of git's is there when a file or a symlink is on the
		// way (git does not look through one either), and what is on the
		// way is not airlock's to touch: a push that replaced directory d
		// with file d leaves this after writing d. Otherwise the removal
		// also takes away the directories it empties, which an
		// interrupted removal may have left.
		if !st.onWay {
			if err := w.remove(p.Path); err != nil {
				return err
			}
		}
	case p.NewMode == filemode.Submodule:
		// A gitlink has no content here.
	case st.kind == wtDir, st.blocked:
		// A directory with files in it where the file goes, or a file or
		// a symlink where its directory goes: not the push's, and in the
		// way.
		return keep()
	default:
		o, err := r.Storer.EncodedObject(plumbing.BlobObject, p.NewHash)
		if err != nil {
			return fmt.Errorf("reading %s: %w", p.Path, err)
		}
		rd, err := o.Reader()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			return err
		}
		if err := w.write(p.Path, p.NewMode, data); err != nil {
			return err
		}
	}
	*entries = append(*entries, p)
	return nil
}

// Recover completes, or undoes, a push to a checked-out branch that was
// interrupted (the process was killed mid-push): when the ref moved, the
// working tree and index are brought to the new commit wherever they are
// as the push left them, and a *KeptError names the paths the user has
// changed since, which are left alone; when it did not, nothing was
// changed and the journal is dropped.
//
// A bare repository has nothing to finish, but a push whose airlock
// process was killed may still be moving its ref: Recover waits for it.
func (l *Local) Recover(ctx context.Context) error {
	if l.bare {
		return l.awaitPushes(ctx)
	}
	dir, _, unlock, err := l.pushLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return l.recoverLocked(ctx, dir)
}

// awaitPushes waits until no push holds the lock (see pushLock). A
// repository airlock never pushed to has no lock to wait on, and one it
// may not write (a source it only pulls from) is only read.
func (l *Local) awaitPushes(ctx context.Context) error {
	common, err := l.commonDir(ctx)
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(common, "airlock", "push.lock"))
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := flock(f); err != nil {
		return err
	}
	return unflock(f)
}

// incomingRefs lists the temporary refs of pushes (refs/airlock/incoming/),
// read from the repository's files (loose and packed) without a process:
// every open of a working-tree target asks.
func (l *Local) incomingRefs() ([]string, error) {
	r, err := l.open()
	if err != nil {
		return nil, err
	}
	it, err := r.Storer.IterReferences()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var refs []string
	err = it.ForEach(func(ref *plumbing.Reference) error {
		if strings.HasPrefix(ref.Name().String(), "refs/airlock/incoming/") {
			refs = append(refs, ref.Name().String())
		}
		return nil
	})
	return refs, err
}

func (l *Local) recoverLocked(ctx context.Context, dir string) error {
	jpath := filepath.Join(dir, "push-journal.json")
	data, err := os.ReadFile(jpath)
	if os.IsNotExist(err) {
		// A push killed between writing its objects and its journal leaves
		// only its temporary ref. Pushes hold the lock we hold now, so no
		// temporary ref is in use.
		refs, err := l.incomingRefs()
		if err != nil {
			return err
		}
		for _, ref := range refs {
			// One that stays is tried again at the next push; it only
			// keeps its objects from git gc meanwhile.
			_, _ = l.git(ctx, nil, "update-ref", "-d", ref)
		}
		return nil
	}
	if err != nil {
		return err
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		// Torn before the rename that publishes it: the ref never moved.
		return os.Remove(jpath)
	}
	drop := func() error {
		_, _ = l.git(ctx, nil, "update-ref", "-d", j.TempRef) // a leftover is removed by the next push
		return os.Remove(jpath)
	}
	cur, err := l.Head(ctx, j.Ref)
	if err != nil {
		return err
	}
	switch cur {
	case j.New:
		wt, err := l.checkedOutIn(ctx, j.Ref)
		if err != nil {
			return err
		}
		if wt != j.Worktree {
			// The branch is no longer checked out there (the user
			// switched branches, or removed that working tree): its files
			// are another commit's now, and whoever checks the branch out
			// again gets the pushed commit from git. Nothing is left for
			// airlock to write, and writing would be writing over them.
			return drop()
		}
		kept, err := l.rollForward(ctx, dir, j)
		if err != nil {
			return &WorktreeError{Ref: j.Ref, Worktree: j.Worktree, Old: j.Old, New: j.New, Err: err}
		}
		if len(kept) > 0 {
			return newKeptError(j, kept)
		}
		return nil
	case j.Old:
		return drop()
	}
	return fmt.Errorf("an interrupted airlock push to %s left %s; the branch has moved since (to %s), so airlock will not touch the working tree: check it, then remove that file",
		j.Ref, jpath, shortid.HashOr(cur, "(no commit: the ref does not exist)"))
}

// changedPaths lists what differs between two commits' trees.
func changedPaths(store *staging.Store, old, new plumbing.Hash) ([]touched, error) {
	treeOf := func(c plumbing.Hash) (plumbing.Hash, error) {
		if c.IsZero() {
			return plumbing.ZeroHash, nil
		}
		co, err := object.GetCommit(store, c)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("commit %s is not in the sandbox's store: %w", c, err)
		}
		return co.TreeHash, nil
	}
	ot, err := treeOf(old)
	if err != nil {
		return nil, err
	}
	nt, err := treeOf(new)
	if err != nil {
		return nil, err
	}
	changes, err := store.DiffTrees(ot, nt)
	if err != nil {
		return nil, err
	}
	out := make([]touched, 0, len(changes))
	for _, c := range changes {
		out = append(out, touched{Path: c.Path, NewMode: c.NewMode, NewHash: c.NewHash, OldMode: c.OldMode, OldHash: c.OldHash})
	}
	return out, nil
}

// checkClean refuses when the working tree or index has changes, untracked
// or ignored files in the way of paths.
func checkClean(ctx context.Context, wt string, paths []touched) error {
	out, err := (&Local{path: wt}).git(ctx, nil, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching", "--no-renames")
	if err != nil {
		return err
	}
	var dirty []string
	for _, e := range strings.Split(string(out), "\x00") {
		if len(e) > 3 {
			dirty = append(dirty, e[3:])
		}
	}
	var in []string
	for _, p := range paths {
		for _, d := range dirty {
			dd := strings.TrimSuffix(d, "/")
			if dd == p.Path || strings.HasPrefix(dd, p.Path+"/") || strings.HasPrefix(p.Path, dd+"/") {
				in = append(in, d)
			}
		}
	}
	if len(in) > 0 {
		sort.Strings(in)
		return &DirtyError{Paths: dedupe(in)}
	}
	return nil
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// writeFileSync writes v as JSON to path atomically and durably.
func writeFileSync(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	// The rename is durable only once the directory is flushed.
	return durable.SyncDir(filepath.Dir(path))
}
