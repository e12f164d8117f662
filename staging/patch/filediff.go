package patch

import (
	"bytes"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/hunk"
)

// FileDiff is one path's change: its patches (two for a type change) and
// the hunks of its text diff (for a rename or copy, against the file it
// is made from: Patches[0].From).
type FileDiff struct {
	Patches []*FilePatch
	Hunks   []string
}

// Text reports whether the change is one text diff (not binary, not a
// type change, no side a symlink) that can be taken hunk by hunk.
func (d FileDiff) Text() bool {
	if len(d.Patches) != 1 {
		return false
	}
	f := d.Patches[0]
	return !f.Binary && f.Unavailable == "" && f.OldMode != 0o120000 && f.NewMode != 0o120000
}

// FileDiffs is the change from tree from to tree to, path by path (a
// rename or copy under its new path, its patch naming the old one), each
// file's hunks as hunk.Split takes them apart, with renames and copies as
// EachRenamed finds them. On an error it returns what it had made so far
// with it.
func FileDiffs(s Source, from, to plumbing.Hash) (map[string]*FileDiff, error) {
	out := map[string]*FileDiff{}
	var buf, text bytes.Buffer
	err := EachRenamed(s, from, to, func(f *FilePatch) error {
		d := out[f.Path]
		if d == nil {
			d = &FileDiff{}
			out[f.Path] = d
		}
		d.Patches = append(d.Patches, f)
		text.Reset()
		if err := f.Format(&text, &buf, false); err != nil {
			return err
		}
		_, hunks, err := hunk.Split(text.String())
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		d.Hunks = append(d.Hunks, hunks...)
		return nil
	})
	return out, err
}
