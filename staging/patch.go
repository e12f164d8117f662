package staging

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/staging/internal/linediff"
)

// FilePatch is the change to one path, with both contents.
type FilePatch struct {
	Path             string
	Op               change.Kind
	OldMode, NewMode filemode.FileMode // zero where the side is absent
	OldHash, NewHash plumbing.Hash
	Old, New         []byte // the contents; nil where the side is absent
	Binary           bool   // either side is binary, as git decides it
	NulText          bool   // git would call it binary, but it is a script or text file: diffed as text
	Added, Deleted   int    // lines, as git diff --numstat counts them
	// Unavailable says why a side's content could not be read (a lazy
	// base file its repository no longer has): the diff names the file
	// and says so, and the rest of the patch goes on.
	Unavailable string

	hunks []byte // plain hunks, computed once
}

// Patch is a set of file changes, sorted by path, that prints as git's
// unified diff.
type Patch struct {
	Files []*FilePatch
}

// Stats sums a patch.
type Stats struct {
	Files, Added, Deleted int
}

func (s Stats) String() string {
	unit := "files"
	if s.Files == 1 {
		unit = "file"
	}
	return fmt.Sprintf("+%d -%d across %d %s", s.Added, s.Deleted, s.Files, unit)
}

// Stats counts files and lines.
func (p *Patch) Stats() Stats {
	var s Stats
	seen := map[string]bool{}
	for _, f := range p.Files {
		if !seen[f.Path] { // a type change is two entries of one file
			seen[f.Path] = true
			s.Files++
		}
		s.Added += f.Added
		s.Deleted += f.Deleted
	}
	return s
}

// String is the plain diff.
func (p *Patch) String() string {
	var b strings.Builder
	p.Format(&b, false)
	return b.String()
}

// Format writes the diff as `git diff` prints it, with or without
// colours. Abbreviated object ids are 7 digits.
func (p *Patch) Format(w io.Writer, color bool) error {
	var b bytes.Buffer
	for _, f := range p.Files {
		if err := f.Format(w, &b, color); err != nil {
			return err
		}
	}
	return nil
}

// Format writes the file's diff as Patch.Format does, through buf (reset
// first; a caller formatting many files passes the same one).
func (f *FilePatch) Format(w io.Writer, buf *bytes.Buffer, color bool) error {
	buf.Reset()
	if err := f.format(buf, color); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func (f *FilePatch) format(b *bytes.Buffer, color bool) error {
	h := linediff.File{Path: f.Path, Created: f.Op == change.Create, Deleted: f.Op == change.Delete,
		OldMode: uint32(f.OldMode), NewMode: uint32(f.NewMode), OldID: shortid.Hash(f.OldHash), NewID: shortid.Hash(f.NewHash),
		Binary: f.Binary, Empty: len(f.Old) == 0 && len(f.New) == 0, Unavailable: f.Unavailable}
	if !linediff.Header(b, h, color) {
		return nil
	}
	if !color && (f.hunks != nil || f.Added+f.Deleted == 0) {
		b.Write(f.hunks)
		return nil
	}
	// Coloured, or too large to have been kept: diffed again, one file at
	// a time, so a patch of a whole workspace is never held whole.
	_, err := linediff.Hunks(b, f.Old, f.New, linediff.Options{Color: color, Text: f.NulText})
	return err
}

// keepHunks is the largest diff of one file a patch keeps; larger ones are
// made again when the patch is written.
const keepHunks = 64 << 10

// newFilePatches makes the entries for one changed path: two when a file
// becomes a symlink or the reverse, as git shows a type change.
// unavailable, when not empty, says why a side could not be read: the
// patch has no hunks and says so.
func newFilePatches(c TreeChange, old, new []byte, unavailable string) ([]*FilePatch, error) {
	if c.Op == change.Update && c.OldMode != c.NewMode && (c.OldMode == filemode.Symlink) != (c.NewMode == filemode.Symlink) {
		del, err := newFilePatches(TreeChange{Path: c.Path, Op: change.Delete, OldMode: c.OldMode, OldHash: c.OldHash}, old, nil, unavailable)
		if err != nil {
			return nil, err
		}
		add, err := newFilePatches(TreeChange{Path: c.Path, Op: change.Create, NewMode: c.NewMode, NewHash: c.NewHash}, nil, new, unavailable)
		if err != nil {
			return nil, err
		}
		return append(del, add...), nil
	}
	if unavailable != "" {
		return []*FilePatch{{Path: c.Path, Op: c.Op, OldMode: c.OldMode, NewMode: c.NewMode, OldHash: c.OldHash, NewHash: c.NewHash,
			Unavailable: unavailable}}, nil
	}
	f := &FilePatch{
		Path: c.Path, Op: c.Op, OldMode: c.OldMode, NewMode: c.NewMode, OldHash: c.OldHash, NewHash: c.NewHash,
		Old: old, New: new, Binary: linediff.IsBinary(old) || linediff.IsBinary(new),
	}
	if f.Binary && (termsafe.TextFile(c.Path, old) || termsafe.TextFile(c.Path, new)) {
		// A script with a NUL byte is still a script: shown as text (the
		// NULs escaped on screen), never hidden as "binary".
		f.Binary, f.NulText = false, true
	}
	if !f.Binary && !(c.Op == change.Update && c.OldHash == c.NewHash) {
		var hunks bytes.Buffer
		st, err := linediff.Hunks(&hunks, old, new, linediff.Options{Text: f.NulText})
		if err != nil {
			return nil, fmt.Errorf("diff %s: %w", c.Path, err)
		}
		f.Added, f.Deleted = st.Added, st.Deleted
		if hunks.Len() <= keepHunks {
			f.hunks = hunks.Bytes()
		}
	}
	return []*FilePatch{f}, nil
}

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
	return s.EachFilePatchOf(a, b, nil, fn)
}

// EachFilePatchOf is EachFilePatch over only the paths keep accepts (all,
// when nil): the others' contents are never read, so a lazy file outside
// them is not fetched.
func (s *Store) EachFilePatchOf(a, b plumbing.Hash, keep func(path string) bool, fn func(*FilePatch) error) error {
	changes, err := s.DiffTrees(a, b)
	if err != nil {
		return err
	}
	if keep != nil {
		changes = slices.DeleteFunc(changes, func(c TreeChange) bool { return !keep(c.Path) })
	}
	read := func(h plumbing.Hash, mode filemode.FileMode) ([]byte, error) {
		if h.IsZero() || mode == filemode.Submodule {
			return nil, nil
		}
		return s.ReadBlob(h)
	}
	for _, c := range changes {
		var why []string
		old, err := read(c.OldHash, c.OldMode)
		if err != nil {
			why = append(why, unreadable(err))
		}
		new, err := read(c.NewHash, c.NewMode)
		if err != nil {
			why = append(why, unreadable(err))
		}
		fps, err := newFilePatches(c, old, new, strings.Join(why, "; "))
		if err != nil {
			return err
		}
		for _, f := range fps {
			if err := fn(f); err != nil {
				return err
			}
		}
	}
	return nil
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
	changes, _, _ = a.split(live, tip.snap, changes, nil)
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
				why = append(why, unreadable(err))
			}
			tc.OldMode = gitMode(oldE.Mode)
		}
		if hasNew {
			if tc.NewHash, new, err = entryBlob(newE); err != nil {
				why = append(why, unreadable(err))
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
		fps, err := newFilePatches(tc, old, new, strings.Join(why, "; "))
		if err != nil {
			return nil, err
		}
		p.Files = append(p.Files, fps...)
	}
	return p, nil
}

// gitMode is the tree entry mode git records for a workspace mode.
func gitMode(m fs.FileMode) filemode.FileMode {
	switch {
	case m&fs.ModeSymlink != 0:
		return filemode.Symlink
	case m&0o100 != 0:
		return filemode.Executable
	}
	return filemode.Regular
}

// TextDiff returns the unified diff hunks from a to b as git prints them,
// with the lines added and deleted.
func TextDiff(a, b []byte) (hunks string, added, deleted int) {
	var buf bytes.Buffer
	st, _ := linediff.Hunks(&buf, a, b, linediff.Options{})
	return buf.String(), st.Added, st.Deleted
}

// unreadable is why a side of a diff could not be read, in one line.
func unreadable(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
