package staging

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/change"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/staging/patch"
)

// The patch model lives in staging/patch; these keep its old names here.
type (
	// FilePatch is the change to one path, with both contents.
	FilePatch = patch.FilePatch
	// Patch is a set of file changes, sorted by path, that prints as
	// git's unified diff.
	Patch = patch.Patch
	// Stats sums a patch.
	Stats = patch.Stats
	// TreeChange is how one path differs between two trees.
	TreeChange = patch.Change
)

// TextDiff returns the unified diff hunks from a to b as git prints them,
// with the lines added and deleted.
func TextDiff(a, b []byte) (hunks string, added, deleted int) { return patch.TextDiff(a, b) }

// gitMode is the tree entry mode git records for a workspace mode.
var gitMode = patch.GitMode

// DiffPatch is the patch from tree a to tree b (zero: the empty tree).
func (s *Store) DiffPatch(a, b plumbing.Hash) (*Patch, error) {
	p := &Patch{}
	err := s.EachFilePatch(a, b, func(f *FilePatch) error {
		p.Files = append(p.Files, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// EachFilePatch calls fn with each file patch from tree a to tree b, in
// path order, and stops at the first error fn returns. Nothing keeps a
// patch once fn returns: a diff of the whole of a large workspace (a
// new branch shows every file) holds one file's contents and hunks at a
// time, not all of them.
func (s *Store) EachFilePatch(a, b plumbing.Hash, fn func(*FilePatch) error) error {
	return patch.Each(s, a, b, fn)
}

// EachFilePatchRenamed is EachFilePatch with renames and copies as git
// diff -M -C finds them (patch.EachRenamed): what a reviewer is shown.
func (s *Store) EachFilePatchRenamed(a, b plumbing.Hash, fn func(*FilePatch) error) error {
	return patch.EachRenamed(s, a, b, fn)
}

// EachFilePatchRenamedOf is EachFilePatchOf with renames and copies
// found among the paths keep accepts.
func (s *Store) EachFilePatchRenamedOf(a, b plumbing.Hash, keep func(path string) bool, fn func(*FilePatch) error) error {
	return patch.EachRenamedOf(s, a, b, keep, fn)
}

// EachFilePatchOf is EachFilePatch over only the paths keep accepts (all,
// when nil): the others' contents are never read, so a lazy file outside
// them is not fetched.
func (s *Store) EachFilePatchOf(a, b plumbing.Hash, keep func(path string) bool, fn func(*FilePatch) error) error {
	return patch.EachOf(s, a, b, keep, fn)
}

// DiffCommit is the patch of a staged commit against its parent.
func (a *Area) DiffCommit(id plumbing.Hash) (*Patch, error) {
	a.mu.RLock()
	var parent, tree plumbing.Hash
	found := false
	for i, l := range a.chain {
		if l.id == id {
			found, tree = true, l.tree
			parent = a.base.tree
			if i > 0 {
				parent = a.chain[i-1].tree
			}
		}
	}
	if !found {
		err := a.noSuchCommit(id)
		a.mu.RUnlock()
		return nil, err
	}
	a.mu.RUnlock()
	return a.store.DiffPatch(parent, tree)
}

// DiffUnstaged is the patch of the unstaged changes, against the last
// staged commit (or the base).
func (a *Area) DiffUnstaged() (*Patch, error) {
	a.mu.RLock()
	tip := a.tip()
	a.mu.RUnlock()
	live, changes := a.ws.SnapshotChanges()
	// Ignored untracked files are not changes (git diff never shows
	// untracked files at all; airlock shows the others as new).
	changes, _, _ = a.ign.Split(live, tip.snap, changes, nil)
	p := &Patch{}
	for _, c := range changes {
		tc := TreeChange{Path: c.Path}
		oldE, hadOld := tip.snap.Lookup(c.Path)
		newE, hasNew := live.Lookup(c.Path)
		var old, new []byte
		var err error
		var why []string
		if hadOld {
			if tc.OldHash, old, err = entryBlob(oldE); err != nil {
				why = append(why, patch.Unreadable(err))
			}
			tc.OldMode = gitMode(oldE.Mode)
		}
		if hasNew {
			if tc.NewHash, new, err = entryBlob(newE); err != nil {
				why = append(why, patch.Unreadable(err))
			}
			tc.NewMode = gitMode(newE.Mode)
		}
		switch {
		case hadOld && hasNew:
			tc.Op = change.Update
		case hasNew:
			tc.Op = change.Create
		default:
			tc.Op = change.Delete
		}
		fps, err := patch.New(tc, old, new, strings.Join(why, "; "))
		if err != nil {
			return nil, err
		}
		p.Files = append(p.Files, fps...)
	}
	return p, nil
}
