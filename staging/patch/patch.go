package patch

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
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
	// From is, for a Rename or Copy, the path the file is made from (Old
	// is its content there), and Similarity git's similarity index.
	From       string
	Similarity int

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
		Binary: f.Binary, Empty: len(f.Old) == 0 && len(f.New) == 0, Unavailable: f.Unavailable,
		From: f.From, Similarity: f.Similarity, Copy: f.Op == change.Copy}
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

// New makes the entries for one changed path: two when a file becomes a
// symlink or the reverse, as git shows a type change. unavailable, when
// not empty, says why a side could not be read: the patch has no hunks
// and says so.
func New(c Change, old, new []byte, unavailable string) ([]*FilePatch, error) {
	if c.Op == change.Update && c.OldMode != c.NewMode && (c.OldMode == filemode.Symlink) != (c.NewMode == filemode.Symlink) {
		del, err := New(Change{Path: c.Path, Op: change.Delete, OldMode: c.OldMode, OldHash: c.OldHash}, old, nil, unavailable)
		if err != nil {
			return nil, err
		}
		add, err := New(Change{Path: c.Path, Op: change.Create, NewMode: c.NewMode, NewHash: c.NewHash}, nil, new, unavailable)
		if err != nil {
			return nil, err
		}
		return append(del, add...), nil
	}
	if unavailable != "" {
		return []*FilePatch{{Path: c.Path, Op: c.Op, OldMode: c.OldMode, NewMode: c.NewMode, OldHash: c.OldHash, NewHash: c.NewHash,
			Unavailable: unavailable, From: c.From, Similarity: c.Similarity}}, nil
	}
	f := &FilePatch{
		Path: c.Path, Op: c.Op, OldMode: c.OldMode, NewMode: c.NewMode, OldHash: c.OldHash, NewHash: c.NewHash,
		Old: old, New: new, Binary: linediff.IsBinary(old) || linediff.IsBinary(new), From: c.From, Similarity: c.Similarity,
	}
	if f.Binary && (termsafe.TextFile(c.Path, old) || termsafe.TextFile(c.Path, new)) {
		// A script with a NUL byte is still a script: shown as text (the
		// NULs escaped on screen), never hidden as "binary".
		f.Binary, f.NulText = false, true
	}
	if !f.Binary && !(c.Op != change.Create && c.Op != change.Delete && c.OldHash == c.NewHash) {
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

// GitMode is the tree entry mode git records for a workspace mode.
func GitMode(m fs.FileMode) filemode.FileMode {
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

// Unreadable is why a side of a diff could not be read, in one line.
func Unreadable(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
