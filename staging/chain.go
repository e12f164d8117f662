package staging

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
)

// Discarded reports what Discard did.
type Discarded struct {
	// Unstaged lists the paths whose changes are unstaged again.
	Unstaged []string
	// Rebuilt maps the ids of later staged commits to their new ids: they
	// were rebuilt on the remaining chain, so their SHAs changed.
	Rebuilt map[plumbing.Hash]plumbing.Hash
	// StillStaged lists paths the discarded commit changed that a later
	// commit changes too: they stay staged, with the later content.
	StillStaged []string
}

// Discard drops the staged commit id. Its changes become unstaged again
// (nothing in the workspace changes) and the commits after it are rebuilt
// on the remaining chain, keeping their messages, authors and dates. If a
// later commit cannot be rebuilt without it, nothing changes and the error
// says which.
func (a *Area) Discard(id plumbing.Hash) (Discarded, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := -1
	for i, l := range a.chain {
		if l.id == id {
			k = i
		}
	}
	if k < 0 {
		return Discarded{}, a.noSuchCommit(id)
	}
	if err := a.inSync(a.tip()); err != nil {
		return Discarded{}, err
	}
	res := Discarded{Rebuilt: map[plumbing.Hash]plumbing.Hash{}}
	gone := a.chain[k]
	later := map[string]bool{}
	for _, l := range a.chain[k+1:] {
		for _, p := range l.paths {
			later[p] = true
		}
	}
	for _, p := range gone.paths {
		if later[p] {
			res.StillStaged = append(res.StillStaged, p)
		} else {
			res.Unstaged = append(res.Unstaged, p)
		}
	}
	chain := append([]link(nil), a.chain[:k]...)
	parent := a.base
	if k > 0 {
		parent = a.chain[k-1]
	}
	for _, old := range a.chain[k+1:] {
		l, err := a.rebuild(parent, old)
		if err != nil {
			return Discarded{}, fmt.Errorf("discard %s: the later staged commit %s %q depends on it: %w; discard that one first",
				shortid.Hash(id), shortid.Hash(old.id), firstLine(old.c.Message), err)
		}
		res.Rebuilt[old.id] = l.id
		chain = append(chain, l)
		parent = l
	}
	a.chain = chain
	a.ws.SetBase(a.tip().snap, a.keep()...)
	return res, nil
}

// rebuild makes old's change again on top of parent.
func (a *Area) rebuild(parent, old link) (link, error) {
	snap, err := a.ws.Overlay(parent.snap, old.snap, old.paths)
	if err != nil {
		return link{}, err
	}
	edits, err := a.editsFor(old.snap, old.paths)
	if err != nil {
		return link{}, err
	}
	l, err := a.commitEdits(parent, edits, old.c.Message, old.c.Author.When, old.c.Committer.When)
	if err != nil {
		return link{}, err
	}
	l.snap, l.paths = snap, old.paths
	l.c.Replaces = old.c.Replaces
	return l, nil
}

// DiscardAll drops every staged commit; their changes become unstaged.
// The workspace does not change.
func (a *Area) DiscardAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.chain = nil
	a.ws.SetBase(a.base.snap, a.keep()...)
}

// Reset drops every staged commit and every change in the workspace: it
// holds the base again, exactly. Checkpoints stay, so a worker can still
// roll back to one.
func (a *Area) Reset() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.ws.Restore(a.base.snap); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	a.chain = nil
	a.ws.SetBase(a.base.snap, a.keep()...)
	return nil
}

// headOffset reads "head" or "@" with ~N, ~ and ^ suffixes (lowercased):
// how many commits before the latest it names.
func headOffset(id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, "head")
	if !ok {
		if rest, ok = strings.CutPrefix(id, "@"); !ok {
			return 0, false
		}
	}
	n := 0
	for rest != "" {
		switch rest[0] {
		case '^':
			n, rest = n+1, rest[1:]
		case '~':
			rest = rest[1:]
			digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
			k := 1
			if digits > 0 {
				if digits > 6 {
					return 0, false
				}
				k, _ = strconv.Atoi(rest[:digits])
			}
			n, rest = n+k, rest[digits:]
		default:
			return 0, false
		}
	}
	return n, true
}

func (a *Area) noSuchCommit(id plumbing.Hash) error { return a.noSuchID(shortid.Hash(id)) }

// noSuchID says that named (as the worker typed it: a caller checks it is
// hex first) names no staged commit, and which ids do. The id is echoed as
// given, never decoded and shown again: "abc1234" is not a whole number of
// bytes, and a decoded form would name some other id.
func (a *Area) noSuchID(named string) error {
	var ids []string
	for _, l := range a.chain {
		ids = append(ids, shortid.Hash(l.id))
	}
	if len(ids) == 0 {
		return fmt.Errorf("%w %s: nothing is staged", ErrNoSuchCommit, named)
	}
	return fmt.Errorf("%w %s; the staged commits are %s (git_status lists them, oldest first)", ErrNoSuchCommit, named, strings.Join(ids, ", "))
}

// Lookup returns the staged commit whose id is id, or starts with id (at
// least 4 hex digits, as git accepts abbreviations), or ErrNoSuchCommit.
// As in git, HEAD (or @) names the latest staged commit, and HEAD~N (or
// HEAD^, HEAD^^) the one N before it.
func (a *Area) Lookup(id string) (*Commit, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	typed := strings.TrimSpace(id)
	id = strings.ToLower(typed)
	if n, ok := headOffset(id); ok {
		switch {
		case len(a.chain) == 0:
			return nil, fmt.Errorf("%w: %s: nothing is staged; git_stage your changes first", ErrNoSuchCommit, strings.ToUpper(id))
		case n >= len(a.chain):
			return nil, fmt.Errorf("%w: %s: only %d commits are staged (HEAD to HEAD~%d); what came before is the base, which is not staged",
				ErrNoSuchCommit, strings.ToUpper(id), len(a.chain), len(a.chain)-1)
		}
		return a.chain[len(a.chain)-1-n].c, nil
	}
	if len(id) < 4 || len(id) > 40 || strings.Trim(id, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%w: %q is not a commit id; use the id git_status shows (at least 4 hex digits)", ErrNoSuchCommit, id)
	}
	var found *Commit
	for _, l := range a.chain {
		if strings.HasPrefix(l.id.String(), id) {
			if found != nil {
				return nil, fmt.Errorf("%w: %q matches more than one staged commit; give more digits", ErrNoSuchCommit, id)
			}
			found = l.c
		}
	}
	if found == nil {
		return nil, a.noSuchID(typed)
	}
	return found, nil
}

// Snapshot writes the workspace as it is now as a tree and returns the
// tree's id. The same content always gives the same id. It costs what
// changed since the last staged commit (or the base).
func (a *Area) Snapshot() (plumbing.Hash, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	tip := a.tip()
	if err := a.inSync(tip); err != nil {
		return plumbing.ZeroHash, err
	}
	live := a.ws.Snapshot()
	var paths []string
	for _, c := range tip.snap.Diff(live) {
		paths = append(paths, c.Path)
	}
	edits, err := a.editsFor(live, paths)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return editTree(a.store, tip.view, edits)
}

// Checkout makes the workspace hold exactly the tree's files, symlinks and
// modes. Staged commits and the base stay; what differs from the last
// staged commit shows as unstaged. Entries the workspace's rules refuse
// are left out and returned.
func (a *Area) Checkout(tree plumbing.Hash) ([]memfs.Refused, error) {
	files, err := a.filesIn(tree, nil)
	if err != nil {
		return nil, err
	}
	s, refused, err := a.ws.NewSnapshot(files)
	if err != nil {
		return nil, err
	}
	if err := a.ws.Restore(s); err != nil {
		return nil, err
	}
	return refused, nil
}

// SeedFrom replaces the workspace with the tree of commit (all of it, or
// only what is at or under paths) and makes commit the base: staged
// commits are dropped. The commit and its objects must be in the store.
// Entries the workspace's rules refuse are left out and returned.
func (a *Area) SeedFrom(commit plumbing.Hash, paths []string) ([]memfs.Refused, error) {
	c, err := object.GetCommit(a.store, commit)
	if err != nil {
		return nil, fmt.Errorf("seed from %s: %w", shortid.Hash(commit), err)
	}
	files, err := a.filesIn(c.TreeHash, paths)
	if err != nil {
		return nil, err
	}
	// Entries the tree check refuses never leave: staged commits are built
	// on the base's tree without them.
	tree, dropped, err := CleanTree(a.store, c.TreeHash)
	if err != nil {
		return nil, fmt.Errorf("seed from %s: %w", shortid.Hash(commit), err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	refused, err := a.ws.Seed(files)
	if err != nil {
		return nil, err
	}
	snap := a.ws.Base()
	view := tree
	switch {
	case len(paths) > 0:
		if view, err = a.viewOf(snap); err != nil {
			return nil, err
		}
	case len(refused) > 0:
		// The workspace is the tree less what it refused: the view is
		// the tree with those entries removed, an edit of O(refused ·
		// depth), not the whole workspace written as a tree again.
		edits := make([]edit, len(refused))
		for i, r := range refused {
			edits[i] = edit{path: r.Path, remove: true}
		}
		if view, err = editTree(a.store, tree, edits); err != nil {
			return nil, fmt.Errorf("seed from %s: %w", shortid.Hash(commit), err)
		}
	}
	a.base = link{id: commit, tree: tree, view: view, snap: snap}
	a.dropped = dropped
	a.chain = nil
	a.pulled = nil
	if len(paths) > 0 {
		a.pulled = append([]string{}, paths...)
	}
	a.ws.SetBase(snap, a.keep()...)
	return refused, nil
}

// filesIn reads the files of tree at or under paths (none: all) for the
// workspace. A path that matches nothing is an error.
func (a *Area) filesIn(tree plumbing.Hash, paths []string) ([]memfs.SeedFile, error) {
	var files []memfs.SeedFile
	matched := make([]bool, len(paths))
	err := walkTree(a.store, tree, "", func(e TreeEntry) error {
		if len(paths) > 0 {
			in := false
			for i, p := range paths {
				p = strings.TrimSuffix(p, "/")
				if p == "." || p == "" || e.Path == p || strings.HasPrefix(e.Path, p+"/") {
					in, matched[i] = true, true
				}
			}
			if !in {
				return nil
			}
		}
		switch e.Mode {
		case filemode.Regular, filemode.Deprecated, filemode.Executable, filemode.Symlink:
		default:
			return nil // submodules have no content to bring in
		}
		mode := memfsMode(e.Mode)
		if e.Mode != filemode.Symlink && !a.store.Holds(e.Hash) {
			// A blob the store reads through a source stays where it
			// is until the worker reads it: the file is lazy. Its size
			// comes from the object's header.
			size, err := a.store.BlobSize(e.Hash)
			if err != nil {
				return fmt.Errorf("blob %s at %q: %w", shortid.Hash(e.Hash), e.Path, err)
			}
			files = append(files, memfs.SeedFile{Path: e.Path, Mode: mode, ID: e.Hash, From: a.store, Size: size})
			return nil
		}
		data, err := a.store.ReadBlob(e.Hash)
		if err != nil {
			return err
		}
		// Blob bytes never change, so the workspace may share them.
		files = append(files, memfs.SeedFile{Path: e.Path, Mode: mode, Data: data, NoCopy: true, ID: e.Hash})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, ok := range matched {
		// The root always exists, even in an empty tree.
		if root := strings.TrimSuffix(paths[i], "/"); !ok && root != "." && root != "" {
			return nil, fmt.Errorf("%q is not in tree %s: nothing at or under that path", paths[i], shortid.Hash(tree))
		}
	}
	return files, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Pick replaces the staged commits up to and including id (what a push of
// id carries) with one commit, on the base, that holds only the changes to
// paths, as they are at id; it keeps id's message. Changes to other paths
// become unstaged again: nothing in the workspace changes. Commits after id
// are rebuilt on top. If that cannot be done, nothing changes and the
// error says why.
func (a *Area) Pick(id plumbing.Hash, paths []string) (*Commit, error) {
	return a.PickAt(id, paths, time.Time{})
}

// PickAt is Pick with the new commit dated at (to the second; the zero
// time: now): the same pick of the same commits at the same time makes
// the same commit, so a pick a restart cut is made again as it was.
func (a *Area) PickAt(id plumbing.Hash, paths []string, when time.Time) (*Commit, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.inSync(a.tip()); err != nil {
		return nil, err
	}
	k := -1
	for i, l := range a.chain {
		if l.id == id {
			k = i
		}
	}
	if k < 0 {
		return nil, a.noSuchCommit(id)
	}
	at := a.chain[k]
	changed := map[string]bool{}
	for _, l := range a.chain[:k+1] {
		for _, p := range l.paths {
			changed[p] = true
		}
	}
	for _, p := range paths {
		if !changed[p] {
			return nil, fmt.Errorf("pick: %q is not changed by the commits up to %s", p, shortid.Hash(id))
		}
	}
	snap, err := a.ws.Overlay(a.base.snap, at.snap, paths)
	if err != nil {
		return nil, fmt.Errorf("pick: %w: %v", ErrConflict, err)
	}
	edits, err := a.editsFor(at.snap, paths)
	if err != nil {
		return nil, err
	}
	now := a.stamp(when)
	picked, err := a.commitEdits(a.base, edits, at.c.Message, now, now)
	if err != nil {
		return nil, fmt.Errorf("pick: %w", err)
	}
	picked.snap, picked.paths = snap, append([]string(nil), paths...)
	chain := []link{picked}
	parent := picked
	for _, old := range a.chain[k+1:] {
		l, err := a.rebuild(parent, old)
		if err != nil {
			return nil, fmt.Errorf("pick: the later staged commit %s %q needs changes that were not picked: %w",
				shortid.Hash(old.id), firstLine(old.c.Message), err)
		}
		chain = append(chain, l)
		parent = l
	}
	a.chain = chain
	a.ws.SetBase(a.tip().snap, a.keep()...)
	return picked.c, nil
}
