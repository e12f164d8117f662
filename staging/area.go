package staging

import (
	"errors"
	"fmt"
	"path"
	"runtime"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging/commitmeta"
	"github.com/airlock-dev/airlock/staging/treecheck"
	"github.com/airlock-dev/airlock/staging/untracked"
)

// Errors callers branch on.
var (
	// ErrNothingToStage: Stage found no change to put in a commit.
	ErrNothingToStage = untracked.ErrNothingToStage
	// ErrNoSuchCommit: an id names no staged commit.
	ErrNoSuchCommit = errors.New("no such staged commit")
	// ErrInvalidMessage: a commit message is empty, too long or not text.
	ErrInvalidMessage = commitmeta.ErrInvalidMessage
	// ErrRefusedContent: a file would make a tree that git fsck refuses
	// (treecheck's, so that one errors.Is finds both).
	ErrRefusedContent = treecheck.ErrRefusedContent
)

// Signature is who a commit is by.
type Signature struct {
	Name  string
	Email string
}

func (s Signature) check(role string) error { return commitmeta.CheckSignature(role, s.Name, s.Email) }

// Config says who staged commits are by and what time it is.
type Config struct {
	Author    Signature
	Committer Signature // zero: the author
	// Now is the clock for commit dates; nil is time.Now.
	Now func() time.Time
	// Location is the time zone recorded in commit dates; nil is UTC.
	Location *time.Location
}

// Commit is a staged commit: a real git commit in the store, on top of the
// previous staged commit or the base.
type Commit struct {
	ID        plumbing.Hash
	Parent    plumbing.Hash // zero for a first commit in an empty sandbox
	Base      plumbing.Hash // the commit the chain starts from; zero when none
	Tree      plumbing.Hash
	Message   string
	Author    object.Signature
	Committer object.Signature
	Created   time.Time
	Files     []File
	// Replaces lists the staged commits this one replaced in place
	// (Amend), the latest first: a re-review says which commit a
	// rejected one became.
	Replaces []plumbing.Hash
}

// File is one path a staged commit changes, relative to its parent.
type File struct {
	Path    string
	Op      change.Kind
	Blob    plumbing.Hash     // zero for a deletion
	Size    int64             // the new size; for a deletion, the old one
	Mode    filemode.FileMode // the new mode; for a deletion, the old one
	OldBlob plumbing.Hash     // zero for a creation
	OldMode filemode.FileMode // zero for a creation
}

// Status is the staged commits and what is not staged yet.
type Status struct {
	Base     plumbing.Hash
	Staged   []*Commit      // oldest first
	Unstaged []memfs.Change // relative to the last staged commit, or the base
	// Ignored is the untracked files git's ignore rules exclude: not in
	// Unstaged, and not staged unless named.
	Ignored []Ignored
}

// Area is the sandbox's git side: the base commit the workspace was seeded
// from and the chain of staged commits on top of it. It is safe for
// concurrent use.
//
// The workspace's own base (what its change tracking compares against) is
// kept at the tip of the chain, so the unstaged changes are exactly what
// memfs tracks, at a cost proportional to them.
type Area struct {
	ws    Workspace
	store *Store
	cfg   Config

	mu    sync.RWMutex
	base  link   // the base commit; its snap is what the workspace was seeded with
	chain []link // staged commits, oldest first
	// pulled is what of the base commit the workspace holds: nil for all of
	// it, else the paths pulled (none, for a sandbox never seeded from one).
	pulled []string
	// dropped is what the base's tree holds that no tree leaving the
	// sandbox may (CleanTree); base.tree is the tree without it.
	dropped []Refusal

	ign untracked.Rules // git's ignore rules: its own lock, a leaf
}

// link is one commit of the chain (or the base) with what the workspace
// side needs of it.
type link struct {
	c     *Commit         // nil for the base
	id    plumbing.Hash   // the commit; zero for an empty sandbox
	tree  plumbing.Hash   // its tree
	view  plumbing.Hash   // the tree of what the workspace holds of it
	snap  *memfs.Snapshot // the workspace-side state, content equal to view
	paths []string        // what this commit changed
}

// New returns an area over ws, keeping git objects in store. The
// workspace's current base becomes the area's base content, with no base
// commit (an empty sandbox, or one seeded directly through memfs).
func New(ws Workspace, store *Store, cfg Config) (*Area, error) {
	if err := cfg.Author.check("author"); err != nil {
		return nil, err
	}
	if cfg.Committer == (Signature{}) {
		cfg.Committer = cfg.Author
	}
	if err := cfg.Committer.check("committer"); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	a := &Area{ws: ws, store: store, cfg: cfg, pulled: []string{}}
	snap := ws.Base()
	view, err := a.viewOf(snap)
	if err != nil {
		return nil, err
	}
	a.base = link{snap: snap, view: view}
	return a, nil
}

// viewOf builds the git tree of a whole snapshot.
func (a *Area) viewOf(s *memfs.Snapshot) (plumbing.Hash, error) {
	var edits []edit
	err := s.Walk(func(e memfs.Entry) error {
		ed, err := a.editFor(e.Path, e, true)
		edits = append(edits, ed)
		return err
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return editTree(a.store, plumbing.ZeroHash, edits)
}

func (a *Area) tip() link {
	if n := len(a.chain); n > 0 {
		return a.chain[n-1]
	}
	return a.base
}

// keep is every snapshot the area holds on to, for the workspace's
// accounting.
func (a *Area) keep() []*memfs.Snapshot {
	out := []*memfs.Snapshot{a.base.snap}
	for _, l := range a.chain {
		out = append(out, l.snap)
	}
	return out
}

// Base returns the base commit; zero when the sandbox was never seeded from
// one.
func (a *Area) Base() plumbing.Hash {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.base.id
}

// Status returns the staged commits, oldest first, the unstaged changes
// and the ignored untracked files. The .gitignore files it reads are those
// along the created files' paths.
func (a *Area) Status() Status {
	a.mu.RLock()
	defer a.mu.RUnlock()
	live, changes := a.ws.SnapshotChanges()
	st := Status{Base: a.base.id}
	st.Unstaged, st.Ignored, _ = a.ign.Split(live, a.tip().snap, changes, nil)
	for _, l := range a.chain {
		st.Staged = append(st.Staged, l.c)
	}
	return st
}

// Commits returns the staged commits, oldest first.
func (a *Area) Commits() []*Commit {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]*Commit, len(a.chain))
	for i, l := range a.chain {
		out[i] = l.c
	}
	return out
}

// Stage makes a commit of the unstaged changes at or under paths (none:
// every unstaged change) on top of the last staged commit, or the base.
// Its tree is the parent's with only the changed directories rewritten.
// After it, those changes are no longer unstaged. Ignored untracked files
// are left out unless a path names them (see StageReport).
func (a *Area) Stage(paths []string, message string) (*Commit, error) {
	r, err := a.StageReport(paths, message)
	return r.Commit, err
}

// StageReport is Stage, saying also which ignored files it took because a
// path named them and which it left out.
func (a *Area) StageReport(paths []string, message string) (StageReport, error) {
	msg, err := commitmeta.CleanMessage(message)
	if err != nil {
		return StageReport{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	parent := a.tip()
	if err := a.inSync(parent); err != nil {
		return StageReport{}, err
	}
	live, all := a.ws.SnapshotChanges()
	// c is nil only when nothing is ignored, and then never asked.
	shown, ignored, c := a.ign.Split(live, parent.snap, all, nil)
	selected, forced, leftOut, err := untracked.Select(c, shown, ignored, paths)
	if err != nil {
		return StageReport{}, err
	}
	var next *memfs.Snapshot
	if len(selected) == len(all) {
		// Everything is staged: the workspace side of the new commit is
		// the live state itself.
		next = live
	} else if next, err = a.ws.Overlay(parent.snap, live, selected); err != nil {
		return StageReport{}, fmt.Errorf("stage: %w: %v", ErrConflict, err)
	}
	edits, err := a.editsFor(live, selected)
	if err != nil {
		return StageReport{}, err
	}
	now := a.now()
	l, err := a.commitEdits(parent, edits, msg, now, now)
	if err != nil {
		return StageReport{}, err
	}
	l.snap, l.paths = next, selected
	a.chain = append(a.chain, l)
	a.ws.SetBase(next, a.keep()...)
	return StageReport{Commit: l.c, Forced: forced, LeftOut: leftOut}, nil
}

// ErrOutOfSync: the workspace's base was changed behind the area's back.
var ErrOutOfSync = errors.New("workspace out of sync with the staging area")

// inSync checks that the workspace still tracks changes against the tip:
// seeding or rebasing it directly, instead of through the area, would make
// every later status and commit wrong.
func (a *Area) inSync(tip link) error {
	if !a.ws.Base().Same(tip.snap) {
		return fmt.Errorf("%w: it was seeded or rebased directly; seed it through the staging area (SeedFrom)", ErrOutOfSync)
	}
	return nil
}

// editsFor turns the entries of s at paths into tree edits, hashing and
// storing their contents in parallel.
func (a *Area) editsFor(s *memfs.Snapshot, paths []string) ([]edit, error) {
	edits := make([]edit, len(paths))
	errs := make([]error, len(paths))
	workers := min(runtime.GOMAXPROCS(0), (len(paths)+255)/256)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(paths); i += workers {
				e, ok := s.Lookup(paths[i])
				edits[i], errs[i] = a.editFor(paths[i], e, ok)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return edits, nil
}

func (a *Area) now() time.Time { return a.cfg.Now().In(a.cfg.Location).Truncate(time.Second) }

// stamp is at as a commit records it (now when at is zero).
func (a *Area) stamp(at time.Time) time.Time {
	if at.IsZero() {
		return a.now()
	}
	return at.In(a.cfg.Location).Truncate(time.Second)
}

// commitEdits writes the commit that applies edits to parent, and returns
// its link (without snap and paths).
func (a *Area) commitEdits(parent link, edits []edit, msg string, authored, committed time.Time) (link, error) {
	tree, err := editTree(a.store, parent.tree, edits)
	if err != nil {
		return link{}, fmt.Errorf("stage: %w", err)
	}
	files := a.filesOf(edits)
	if len(files) == 0 {
		return link{}, fmt.Errorf("stage: %w: the changes are identical to the parent commit's content", ErrNothingToStage)
	}
	view := tree
	if parent.view != parent.tree {
		if view, err = editTree(a.store, parent.view, edits); err != nil {
			return link{}, fmt.Errorf("stage: %w", err)
		}
	}
	c := &object.Commit{
		Author:    object.Signature{Name: a.cfg.Author.Name, Email: a.cfg.Author.Email, When: authored},
		Committer: object.Signature{Name: a.cfg.Committer.Name, Email: a.cfg.Committer.Email, When: committed},
		Message:   msg,
		TreeHash:  tree,
	}
	if !parent.id.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent.id}
	}
	id, err := a.store.Put(c)
	if err != nil {
		return link{}, fmt.Errorf("stage: %w", err)
	}
	sc := &Commit{
		ID: id, Parent: parent.id, Base: a.base.id, Tree: tree, Message: msg,
		Author: c.Author, Committer: c.Committer, Created: committed, Files: files,
	}
	return link{c: sc, id: id, tree: tree, view: view}, nil
}

// filesOf describes edits, which editTree has applied (and so knows what
// each path held before), leaving out edits that changed nothing.
func (a *Area) filesOf(edits []edit) []File {
	var files []File
	for _, ed := range edits {
		f := File{Path: ed.path}
		switch {
		case ed.remove && !ed.had:
			continue
		case ed.remove:
			f.Op, f.Mode, f.OldMode, f.OldBlob = change.Delete, ed.old.Mode, ed.old.Mode, ed.old.Hash
			f.Size, _ = a.store.BlobSize(ed.old.Hash)
		case ed.had && ed.old.Mode == ed.mode && ed.old.Hash == ed.hash:
			continue
		default:
			f.Op, f.Blob, f.Mode = change.Create, ed.hash, ed.mode
			if ed.had {
				f.Op, f.OldBlob, f.OldMode = change.Update, ed.old.Hash, ed.old.Mode
			}
			f.Size, _ = a.store.BlobSize(ed.hash)
		}
		files = append(files, f)
	}
	return files
}

// editFor turns the workspace entry at p (ok false: none) into a tree edit,
// storing its content. Every path and symlink is checked again here, so no
// tree that git fsck would refuse can be built, whatever reached the
// workspace.
func (a *Area) editFor(p string, e memfs.Entry, ok bool) (edit, error) {
	if _, err := pathguard.CheckPath(p); err != nil {
		return edit{}, fmt.Errorf("stage: %w", err)
	}
	if !ok {
		return edit{path: p, remove: true}, nil
	}
	if err := a.ws.CheckDeny(p); err != nil {
		return edit{}, fmt.Errorf("stage: %w", err)
	}
	mode := gitMode(e.Mode)
	special := treecheck.GitFileName(path.Base(p))
	if e.Lazy() && mode != filemode.Symlink && special == "" {
		// A base file moved or chmodded and not read since: its blob is
		// the base's, readable through the store, and stays unread.
		return edit{path: p, mode: mode, hash: plumbing.Hash(e.ID)}, nil
	}
	data, err := e.Content()
	if err != nil {
		return edit{}, fmt.Errorf("stage: %w", err)
	}
	switch {
	case mode == filemode.Symlink:
		if err := pathguard.CheckSymlink(p, string(data)); err != nil {
			return edit{}, fmt.Errorf("stage: %w", err)
		}
	case !e.Mode.IsRegular():
		return edit{}, fmt.Errorf("stage %s: %w: mode %v is neither a file nor a symlink", p, ErrRefusedContent, e.Mode)
	}
	if special != "" {
		if mode == filemode.Symlink {
			return edit{}, fmt.Errorf("stage %s: %w: %s may not be a symlink; git fsck would reject the commit, so it cannot be staged", p, ErrRefusedContent, special)
		}
		if err := treecheck.CheckGitFile(p, special, data); err != nil {
			return edit{}, fmt.Errorf("stage %w, so it cannot be staged", err)
		}
	}
	h, err := a.store.putBlobID(e.ID, data)
	if err != nil {
		return edit{}, fmt.Errorf("stage %s: %w", p, err)
	}
	return edit{path: p, mode: mode, hash: h}, nil
}
