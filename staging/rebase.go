package staging

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
)

// ConflictError lists paths changed both at the target and in the sandbox.
type ConflictError struct {
	Onto  plumbing.Hash
	Paths []string
}

func (e *ConflictError) Error() string {
	list, more := e.Paths, ""
	if len(list) > 20 {
		list, more = list[:20], fmt.Sprintf(" and %d more", len(e.Paths)-20)
	}
	return fmt.Sprintf("%v: the target (now at %s) changed %s%s, which the sandbox changed too; nothing was merged. "+
		"Pull those files again to see the target's version, redo your change on top, and stage again",
		ErrConflict, shortid.Hash(e.Onto), strings.Join(list, ", "), more)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// Rebased reports what Rebase did.
type Rebased struct {
	Onto plumbing.Hash
	// Rebuilt maps each staged commit's old id to its new one.
	Rebuilt map[plumbing.Hash]plumbing.Hash
	// Updated lists the paths brought into the workspace from onto: the
	// target changed them, the sandbox did not.
	Updated []string
	// Refused lists what onto has that the workspace's rules keep out.
	Refused []memfs.Refused
}

// Rebase moves the base to onto (a commit already in the store, fetched
// from the target) and rebuilds every staged commit on it, keeping
// messages, authors and dates. The paths the target changed since the base
// must not overlap with the paths the sandbox changed, staged or not; if
// they do, Rebase changes nothing and returns a *ConflictError listing
// them. Target changes within what the workspace pulled are brought into
// the workspace, so that no later push undoes them. A sandbox that never
// pulled rebases onto onto the same way.
func (a *Area) Rebase(onto plumbing.Hash) (Rebased, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	res := Rebased{Onto: onto, Rebuilt: map[plumbing.Hash]plumbing.Hash{}}
	if err := a.inSync(a.tip()); err != nil {
		return res, err
	}
	if onto == a.base.id {
		return res, nil
	}
	oc, err := object.GetCommit(a.store, onto)
	if err != nil {
		return res, fmt.Errorf("rebase onto %s: fetch it from the target first: %w", shortid.Hash(onto), err)
	}
	ontoTree, dropped, err := CleanTree(a.store, oc.TreeHash)
	if err != nil {
		return res, fmt.Errorf("rebase onto %s: %w", shortid.Hash(onto), err)
	}
	upstream, err := a.store.DiffTrees(a.base.tree, ontoTree)
	if err != nil {
		return res, err
	}
	clash := a.overlap(upstream)
	if len(clash) > 0 {
		return res, &ConflictError{Onto: onto, Paths: clash}
	}

	// Everything is computed before anything changes.
	upSnap, paths, viewEdits, refused, err := a.upstreamInView(upstream)
	if err != nil {
		return res, err
	}
	res.Refused = refused
	baseSnap, err := a.ws.Overlay(a.base.snap, upSnap, paths)
	if err != nil {
		return res, err
	}
	view := ontoTree
	if a.pulled != nil || len(refused) > 0 {
		if view, err = editTree(a.store, a.base.view, viewEdits); err != nil {
			return res, err
		}
	}
	base := link{id: onto, tree: ontoTree, view: view, snap: baseSnap}
	chain := make([]link, 0, len(a.chain))
	parent := base
	for _, old := range a.chain {
		l, err := a.rebuild(parent, old)
		if err != nil {
			return res, fmt.Errorf("rebase: %s %q: %w", shortid.Hash(old.id), firstLine(old.c.Message), err)
		}
		res.Rebuilt[old.id] = l.id
		chain = append(chain, l)
		parent = l
	}
	// The workspace takes the target's changes only if the worker did not
	// touch those paths meanwhile; this is the one step that changes it.
	if err := a.ws.ApplyFrom(upSnap, paths); err != nil {
		return res, fmt.Errorf("rebase: %w", err)
	}
	for i := range chain {
		chain[i].c.Base = onto
	}
	a.base, a.chain, a.dropped = base, chain, dropped
	a.ws.SetBase(a.tip().snap, a.keep()...)
	res.Updated = paths
	return res, nil
}

// overlap lists the paths upstream changed that the sandbox changed too,
// staged or not (the same path, or one under the other), sorted.
func (a *Area) overlap(upstream []TreeChange) []string {
	ours := map[string]bool{}
	for _, l := range a.chain {
		for _, p := range l.paths {
			ours[p] = true
		}
	}
	for _, c := range a.ws.Changes() {
		ours[c.Path] = true
	}
	var clash []string
	for _, u := range upstream {
		for o := range ours {
			if u.Path == o || strings.HasPrefix(o, u.Path+"/") || strings.HasPrefix(u.Path, o+"/") {
				clash = append(clash, u.Path)
				break
			}
		}
	}
	sort.Strings(clash)
	return clash
}

// upstreamInView is what of upstream the workspace takes: a snapshot of
// the changed files it holds a view of, their paths, the edits that bring
// the view's tree to them, and the files its rules refuse (left out of
// all three).
func (a *Area) upstreamInView(upstream []TreeChange) (*memfs.Snapshot, []string, []edit, []memfs.Refused, error) {
	var inView []TreeChange
	var files []memfs.SeedFile
	for _, u := range upstream {
		if !a.inView(u.Path) {
			continue
		}
		inView = append(inView, u)
		if u.Op == change.Delete || u.NewMode == filemode.Submodule {
			continue
		}
		data, err := a.store.ReadBlob(u.NewHash)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		mode := memfsMode(u.NewMode)
		files = append(files, memfs.SeedFile{Path: u.Path, Mode: mode, Data: data, NoCopy: true})
	}
	upSnap, refused, err := a.ws.NewSnapshot(files)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	skip := map[string]bool{}
	for _, r := range refused {
		skip[r.Path] = true
	}
	var paths []string
	var viewEdits []edit
	for _, u := range inView {
		if skip[u.Path] {
			continue
		}
		paths = append(paths, u.Path)
		if u.Op == change.Delete {
			viewEdits = append(viewEdits, edit{path: u.Path, remove: true})
		} else {
			viewEdits = append(viewEdits, edit{path: u.Path, mode: u.NewMode, hash: u.NewHash})
		}
	}
	return upSnap, paths, viewEdits, refused, nil
}

// inView reports whether the workspace holds p's part of the base.
func (a *Area) inView(p string) bool {
	if a.pulled == nil {
		return true
	}
	for _, q := range a.pulled {
		q = strings.TrimSuffix(q, "/")
		if q == "" || q == "." || p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

func memfsMode(m filemode.FileMode) fs.FileMode {
	switch m {
	case filemode.Executable:
		return 0o755
	case filemode.Symlink:
		return fs.ModeSymlink | 0o777
	}
	return 0o644
}

// PullPaths brings more of the base commit into the workspace: the files
// at or under paths, which were not pulled before, come in as part of the
// base (not as changes). It refuses, changing nothing, where the worker
// already has something of its own at those paths.
func (a *Area) PullPaths(paths []string) ([]string, []memfs.Refused, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.base.id.IsZero() {
		return nil, nil, fmt.Errorf("nothing was pulled yet: pull from a target first")
	}
	if err := a.inSync(a.tip()); err != nil {
		return nil, nil, err
	}
	files, err := a.filesIn(a.base.tree, paths)
	if err != nil {
		return nil, nil, err
	}
	var fresh []memfs.SeedFile
	for _, f := range files {
		if !a.inView(f.Path) { // what is in view already stays as it is
			fresh = append(fresh, f)
		}
	}
	if len(fresh) == 0 {
		return nil, nil, nil
	}
	snap, refused, err := a.ws.NewSnapshot(fresh)
	if err != nil {
		return nil, nil, err
	}
	skip := map[string]bool{}
	for _, r := range refused {
		skip[r.Path] = true
	}
	var got []string
	var edits []edit
	for _, f := range fresh {
		if skip[f.Path] {
			continue
		}
		got = append(got, f.Path)
		e, _ := snap.Lookup(f.Path)
		ed, err := a.editFor(f.Path, e, true)
		if err != nil {
			return nil, nil, err
		}
		edits = append(edits, ed)
	}
	baseSnap, err := a.ws.Overlay(a.base.snap, snap, got)
	if err != nil {
		return nil, nil, err
	}
	view, err := editTree(a.store, a.base.view, edits)
	if err != nil {
		return nil, nil, err
	}
	// Staged commits do not touch these paths (they were not in the
	// workspace), so each commit's workspace side gains them as they are.
	chain := make([]link, len(a.chain))
	for i, l := range a.chain {
		if l.snap, err = a.ws.Overlay(l.snap, snap, got); err != nil {
			return nil, nil, err
		}
		if l.view, err = editTree(a.store, l.view, edits); err != nil {
			return nil, nil, err
		}
		chain[i] = l
	}
	if err := a.ws.ApplyFrom(snap, got); err != nil {
		return nil, nil, fmt.Errorf("pull: %w", err)
	}
	a.base.snap, a.base.view, a.chain = baseSnap, view, chain
	if a.pulled != nil {
		a.pulled = append(a.pulled, paths...)
	}
	a.ws.SetBase(a.tip().snap, a.keep()...)
	return got, refused, nil
}

// Advance records that the staged commits up to and including id reached
// the target: id becomes the base, and the commits after it stay staged.
func (a *Area) Advance(id plumbing.Hash) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, l := range a.chain {
		if l.id != id {
			continue
		}
		l.paths, l.c = nil, nil
		a.base, a.dropped = l, nil
		a.chain = append([]link(nil), a.chain[i+1:]...)
		for j := range a.chain {
			// Commits handed out are never changed: the later ones get
			// copies that name their new base.
			c := *a.chain[j].c
			c.Base = id
			a.chain[j].c = &c
		}
		a.ws.SetBase(a.tip().snap, a.keep()...)
		return nil
	}
	return a.noSuchCommit(id)
}

// Dropped lists the entries of the base commit's tree that the tree check
// refuses (see CleanTree): staged commits leave them out, so a push of one
// deletes them where the target has them.
func (a *Area) Dropped() []Refusal {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return append([]Refusal(nil), a.dropped...)
}

// Pulled returns what of the base commit the workspace holds: nil for all
// of it, else the paths pulled (empty: nothing).
func (a *Area) Pulled() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.pulled == nil {
		return nil
	}
	return append([]string{}, a.pulled...)
}
