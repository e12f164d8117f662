package staging

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
)

// TipView returns the commit at the tip of the chain (or the base) and the
// tree of what the workspace holds of it: what a checkpoint taken now is
// relative to. Replay takes the tree back.
func (a *Area) TipView() (commit, view plumbing.Hash) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	t := a.tip()
	return t.id, t.view
}

// BaseView returns the base commit and the tree of what the workspace holds
// of it: a partial pull changes the second without the first.
func (a *Area) BaseView() (commit, view plumbing.Hash) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.base.id, a.base.view
}

// Replay returns what the workspace would hold if the checkpoint cp,
// taken when the tip's view was the tree then, were replayed on the
// current tip: the checkpoint's own changes (where cp differs from then)
// on top of the tip, which keeps what changed upstream (a pull, a push, a
// rebase) since. Where both changed a path, the tip's version stays and
// the path is listed as a conflict. Nothing changes: the caller makes the
// workspace the result.
func (a *Area) Replay(cp *memfs.Snapshot, then plumbing.Hash) (*memfs.Snapshot, []string, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	tip := a.tip().snap
	var thenTree *object.Tree
	if !then.IsZero() {
		var err error
		if thenTree, err = object.GetTree(a.store, then); err != nil {
			return nil, nil, fmt.Errorf("replay: the checkpoint's base tree %s: %w", shortid.Hash(then), err)
		}
	}
	var take, conflicts []string
	for _, c := range tip.Diff(cp) {
		cpE, cpOK := cp.Lookup(c.Path)
		curE, curOK := tip.Lookup(c.Path)
		was, err := entryAt(a.store, thenTree, c.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("replay: %s: %w", c.Path, err)
		}
		worker := !sameEntry(cpE, cpOK, was)
		upstream := !sameEntry(curE, curOK, was)
		switch {
		case !worker:
			// The checkpoint had it as it came; the tip's version is newer.
		case !upstream && !clashes(tip, cp, c.Path, cpOK):
			take = append(take, c.Path)
		default:
			conflicts = append(conflicts, c.Path)
		}
	}
	out, err := a.ws.Overlay(tip, cp, take)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: %w", err)
	}
	return out, conflicts, nil
}

// clashes reports whether taking the checkpoint's version of p would
// collide with the tip's tree: a file of the tip where p needs a directory
// (one of p's parents), or a directory of the tip where p would be a file.
// Upstream changed those, so upstream's version stays.
func clashes(tip, cp *memfs.Snapshot, p string, cpHas bool) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			if _, isFile := tip.Lookup(p[:i]); isFile && cpHas {
				return true
			}
		}
	}
	return cpHas && tip.IsDir(p)
}

// entryAt is the entry at path p of tree t (nil: none), walking the tree
// itself: a file where p needs a directory means p is not there.
func entryAt(s *Store, t *object.Tree, p string) (*object.TreeEntry, error) {
	if t == nil {
		return nil, nil
	}
	comps := strings.Split(p, "/")
	for i, c := range comps {
		var found *object.TreeEntry
		for j := range t.Entries {
			if t.Entries[j].Name == c {
				found = &t.Entries[j]
				break
			}
		}
		if found == nil {
			return nil, nil
		}
		if i == len(comps)-1 {
			return found, nil
		}
		if found.Mode != filemode.Dir {
			return nil, nil
		}
		sub, err := object.GetTree(s, found.Hash)
		if err != nil {
			return nil, err
		}
		t = sub
	}
	return nil, nil
}

// sameEntry reports whether a workspace entry (ok false: none) is the tree
// entry e (nil: none).
func sameEntry(w memfs.Entry, ok bool, e *object.TreeEntry) bool {
	if !ok || e == nil {
		return !ok && (e == nil || e.Mode == filemode.Dir)
	}
	if gitMode(w.Mode) != e.Mode {
		return false
	}
	if w.ID != [20]byte{} {
		return plumbing.Hash(w.ID) == e.Hash
	}
	h, _, err := entryBlob(w)
	return err == nil && h == e.Hash
}

// entryBlob returns a workspace entry's blob id and content, loading a
// lazy one. A known id is not computed again, and is returned with the
// error when the content cannot be read.
func entryBlob(e memfs.Entry) (plumbing.Hash, []byte, error) {
	data, err := e.Content()
	if err != nil {
		return plumbing.Hash(e.ID), nil, err
	}
	if e.ID != [20]byte{} {
		return plumbing.Hash(e.ID), data, nil
	}
	return plumbing.ComputeHash(plumbing.BlobObject, data), data, nil
}
