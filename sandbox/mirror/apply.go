package mirror

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/memfs"
)

// Workspace is what Apply changes: the worker's view of the workspace
// (memfs.Workspace), whose guard, deny list and quotas a run's changes
// pass as a tool's writes do.
type Workspace interface {
	Snapshot() *memfs.Snapshot
	Lstat(name string) (fs.FileInfo, error)
	Remove(name string) error
	RemoveAll(name string) error
	MkdirAll(name string, perm fs.FileMode) error
	Symlink(target, link string) error
	// WriteFileOwned writes data, which it keeps: not copied.
	WriteFileOwned(name string, data []byte, perm fs.FileMode) error
	Chmod(name string, mode fs.FileMode) error
}

// Apply brings a run's changes (read by Changes) into ws, which held
// start when the run began, and returns what was refused. A path another
// tool changed during the run keeps that change.
func Apply(ws Workspace, start *memfs.Snapshot, changes []Change) []memfs.Refused {
	var refused []memfs.Refused
	refuse := func(p string, err error) { refused = append(refused, memfs.Refused{Path: p, Err: err}) }
	now := ws.Snapshot()
	movedMeanwhile := func(p string) bool {
		a, aok := start.Lookup(p)
		b, bok := now.Lookup(p)
		return aok != bok || aok && !a.Same(b)
	}
	skipUnder := ""
	for _, c := range changes {
		if skipUnder != "" && strings.HasPrefix(c.Path, skipUnder+"/") {
			continue
		}
		skipUnder = ""
		if c.Other != "" {
			refuse(c.Path, fmt.Errorf("the run made %s here, which the workspace cannot hold", c.Other))
			continue
		}
		if c.Kind != MadeDir && c.Kind != Replaced && movedMeanwhile(c.Path) {
			refuse(c.Path, errors.New("changed by another tool while the command ran; that change stays, the run's is dropped"))
			continue
		}
		var err error
		switch c.Kind {
		case Removed:
			if _, lerr := ws.Lstat(c.Path); lerr == nil {
				err = ws.RemoveAll(c.Path)
			}
		case Replaced:
			if fi, lerr := ws.Lstat(c.Path); lerr == nil && !fi.IsDir() || lerr == nil && c.Kind == Replaced {
				err = ws.RemoveAll(c.Path)
			}
			if err == nil {
				err = ws.MkdirAll(c.Path, 0o755)
			}
		case MadeDir:
			if fi, lerr := ws.Lstat(c.Path); lerr == nil && !fi.IsDir() {
				err = ws.Remove(c.Path)
			}
			if err == nil {
				err = ws.MkdirAll(c.Path, 0o755)
			}
		case Linked:
			if _, lerr := ws.Lstat(c.Path); lerr == nil {
				err = ws.RemoveAll(c.Path)
			}
			if err == nil {
				err = ws.Symlink(string(c.Data), c.Path)
			}
		case Wrote:
			fi, lerr := ws.Lstat(c.Path)
			if lerr == nil && fi.IsDir() {
				err = ws.RemoveAll(c.Path)
			}
			perm := fs.FileMode(0o644)
			if c.Mode&0o111 != 0 {
				perm = 0o755
			}
			if err == nil {
				// The content was read for this: handed over, not copied.
				err = ws.WriteFileOwned(c.Path, c.Data, perm)
			}
			if err == nil && lerr == nil && !fi.IsDir() && fi.Mode().Perm() != perm {
				// A new file has perm already; one that was there keeps
				// its mode unless told.
				err = ws.Chmod(c.Path, perm)
			}
		}
		if err != nil {
			refuse(c.Path, err)
			if c.Kind == MadeDir || c.Kind == Replaced {
				skipUnder = c.Path
			}
		}
	}
	return refused
}

// Effect names what the run created, modified and deleted, as
// git_status would: files and symlinks, compared with the start.
func Effect(start, now *memfs.Snapshot, changes []Change) (created, modified, deleted []string) {
	// A set, and each path's ancestors looked up in it: a run touching
	// a hundred thousand paths costs that, not its square.
	touched := make(map[string]bool, len(changes))
	for _, c := range changes {
		touched[c.Path] = true
	}
	under := func(p string) bool {
		for ; p != "." && p != "/" && p != ""; p = path.Dir(p) {
			if touched[p] {
				return true
			}
		}
		return false
	}
	for _, c := range start.Diff(now) {
		if !under(c.Path) {
			continue
		}
		switch c.Kind {
		case change.Create:
			created = append(created, c.Path)
		case change.Delete:
			deleted = append(deleted, c.Path)
		default:
			modified = append(modified, c.Path)
		}
	}
	sort.Strings(created)
	sort.Strings(modified)
	sort.Strings(deleted)
	return created, modified, deleted
}
