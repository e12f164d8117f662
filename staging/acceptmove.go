package staging

import (
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/hunk"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging/patch"
)

// A renamed or copied file (git diff -M -C's, as the reviewer is shown
// it) is accepted as git apply takes its patch: the accepted hunks are
// applied to the file it is made from, as the accepted changes before it
// leave that file, and the result is written under the new name; a
// rename also takes the old name away. Accepting any hunk of a rename
// renames the file. A rename or copy the selection does not name is left
// out whole: the file keeps its old name and content, and nothing is
// made under the new one (a reviewer who leaves out every edit of a
// rename, having been shown "rename from ... to ...", has not accepted
// the move either); an exact rename, with no hunks, is accepted whole or
// not at all.

// movedFrom is the path a file's change is made from, when it is a
// rename or copy, and whether it takes that path away.
func movedFrom(d *patch.FileDiff) (from string, rename bool) {
	if len(d.Patches) != 1 || d.Patches[0].From == "" {
		return "", false
	}
	return d.Patches[0].From, d.Patches[0].Op == change.Rename
}

// acceptMoved works out what the accepted part of a rename or copy to
// fs.Path from from makes on parent, as acceptFile does for a file
// changed in place: whole when the commit's version is taken as it is.
func (a *Area) acceptMoved(parent, was, old link, fs FileSelection, d *patch.FileDiff, from string) (sf memfs.SeedFile, whole bool, err error) {
	p := fs.Path
	where := fmt.Sprintf("%s (from %s) in commit %s %q", p, from, shortid.Hash(old.id), firstLine(old.c.Message))
	before, hadBefore := was.snap.Lookup(from)
	now, hasNow := parent.snap.Lookup(from)
	after, _ := old.snap.Lookup(p)
	if _, taken := parent.snap.Lookup(p); taken {
		return memfs.SeedFile{}, false, fmt.Errorf("accept: %s: the accepted changes before it leave a file at %s, which the commit did not find there: %w; accept the later change that removed it too, or leave this file out",
			where, p, ErrHunkDepends)
	}
	if !hasNow {
		return memfs.SeedFile{}, false, fmt.Errorf("accept: %s: %s is not there after the accepted changes before it: %w; accept the earlier change that made it too, or leave this file out",
			where, from, ErrHunkDepends)
	}
	same := hadBefore && before.Mode == now.Mode
	if same {
		h1, _, err1 := entryBlob(before)
		h2, _, err2 := entryBlob(now)
		same = err1 == nil && err2 == nil && h1 == h2
	}
	all := acceptsAll(fs, d)
	if all && same {
		return memfs.SeedFile{}, true, nil
	}
	if !d.Text() {
		return memfs.SeedFile{}, false, fmt.Errorf("accept: %s is a binary or symlink rename, taken whole or not at all, and %s is not as the commit found it: %w; accept the earlier change to it too, or leave this file out",
			where, from, ErrHunkDepends)
	}
	hunks, index := d.Hunks, []int(nil)
	if !fs.Whole {
		if len(fs.Hunks) == 0 {
			return memfs.SeedFile{}, false, fmt.Errorf("accept: no hunk of %s is selected; select some, accept it whole, or leave the file out", where)
		}
		if hunks, index, err = hunk.Pick(d.Hunks, fs.Hunks); err != nil {
			return memfs.SeedFile{}, false, fmt.Errorf("accept: %s: %w", where, err)
		}
	}
	_, base, err := entryBlob(now)
	if err != nil {
		return memfs.SeedFile{}, false, fmt.Errorf("accept: %s: %w", from, err)
	}
	data, err := hunk.Apply(base, hunks)
	var nm *hunk.NoMatchError
	if errors.As(err, &nm) {
		idx := nm.Index
		if index != nil {
			idx = index[idx]
		}
		return memfs.SeedFile{}, false, fmt.Errorf("accept: hunk %d (%s) of %s does not apply to %s as the accepted changes before it leave it (%s): %w; accept that earlier change too, or leave this hunk out",
			idx, nm.Header, where, from, nm.Why, ErrHunkDepends)
	}
	if err != nil {
		return memfs.SeedFile{}, false, fmt.Errorf("accept: %s: %w", where, err)
	}
	// A rename taken in part keeps the file's mode, as a change in place
	// does (acceptFile); taken whole, the commit's.
	mode := now.Mode
	if fs.Whole {
		mode = after.Mode
	}
	return memfs.SeedFile{Path: p, Mode: mode.Perm(), Data: data, NoCopy: true}, false, nil
}

// acceptsAll reports whether fs takes every hunk of d whole.
func acceptsAll(fs FileSelection, d *patch.FileDiff) bool {
	if fs.Whole {
		return true
	}
	if len(fs.Hunks) != len(d.Hunks) {
		return false
	}
	for _, h := range fs.Hunks {
		if len(h.Lines) != 0 && !everyLine(d.Hunks, h) {
			return false
		}
	}
	return true
}
