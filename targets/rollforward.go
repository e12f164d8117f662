package targets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/internal/durable"
	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/internal/worktree"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

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

// rollForward brings the working tree and index to the journal's new
// commit at each of the journal's paths that is as the push left it, then
// clears the journal, and returns the paths it kept. It is idempotent, so
// recovery can run it again after a crash. Files are written by a
// worktree.Writer: never through a symlink in the tree, never at a path the guard
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
			return nil, fmt.Errorf("%w: %v", worktree.ErrUnsafePath, err)
		}
	}
	wtGit := &Local{path: j.Worktree}
	index, err := wtGit.indexEntries(ctx)
	if err != nil {
		return nil, err
	}
	trustMode := wtGit.trustsFileMode(ctx)
	w, err := worktree.Open(j.Worktree, filepath.Join(dir, "tmp"))
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
		_, _ = wtGit.git(ctx, nil, "--work-tree="+j.Worktree, "update-index", "-q", "--refresh")
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
func (l *Local) finishPath(r *git.Repository, w *worktree.Writer, p touched, idx indexEntry, trustMode bool, kept *keptSet, entries *[]touched) error {
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
	st, err := w.Stat(p.Path)
	if err != nil {
		return err
	}
	switch {
	case st.Holds(p.NewMode, p.NewHash, trustMode):
		// Already there.
	case !st.Holds(p.OldMode, p.OldHash, trustMode):
		return keep()
	case p.NewMode == 0:
		// Nothing of git's is there when a file or a symlink is on the
		// way (git does not look through one either), and what is on the
		// way is not airlock's to touch: a push that replaced directory d
		// with file d leaves this after writing d. Otherwise the removal
		// also takes away the directories it empties, which an
		// interrupted removal may have left.
		if !st.OnWay {
			if err := w.Remove(p.Path); err != nil {
				return err
			}
		}
	case p.NewMode == filemode.Submodule:
		// A gitlink has no content here.
	case st.Kind == worktree.Dir, st.Blocked:
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
		if err := w.Write(p.Path, p.NewMode, data); err != nil {
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
// or ignored files in the way of paths. A submodule is looked at for the
// commit it has checked out, never inside (--ignore-submodules=dirty):
// git would run git in it, with its own config, which Command never read
// (TestNoProgramASubmoduleNames). git looks at wt, the files airlock
// writes, even where the repository's core.worktree names another
// directory (TestPushKeepsEditsWhenCoreWorktreeIsElsewhere).
func checkClean(ctx context.Context, wt string, paths []touched) error {
	out, err := (&Local{path: wt}).git(ctx, nil, "--work-tree="+wt, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching",
		"--no-renames", "--ignore-submodules=dirty")
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
