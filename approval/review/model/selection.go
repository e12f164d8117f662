package model

import (
	"errors"

	"github.com/airlock-dev/airlock/approval"
)

// ErrNothingAccepted: the reviewer left everything out, so nothing would
// land; rejecting says that.
var ErrNothingAccepted = errors.New("you left everything out: to push nothing, reject the push")

// canPick says whether the selection may change, and how.
func (m *Review) canPick() error {
	switch {
	case m.Shown == ShownInterdiff:
		return ErrReadOnly
	case m.Shown == ShownIgnoringSpace:
		return ErrSpaceShown
	case m.mode == pickNone:
		return ErrNotPickable
	}
	return nil
}

// key is where a hunk's selection is kept: the hunk, or for a review
// picked file by file, its file (Hunk -1).
func (m *Review) key(h Ref) Ref {
	if f := m.File(FileRef{h.Commit, h.File}); m.mode == pickFiles || f != nil && f.Whole {
		h.Hunk = -1
	}
	return h
}

// pickable says whether h may be picked: it exists, and is not a file
// of the base.
func (m *Review) pickable(h Ref) error {
	switch {
	case !m.exists(h):
		return ErrNoSuchHunk
	case m.Commits[h.Commit].Base:
		return ErrFromBase
	}
	return nil
}

func (m *Review) exists(h Ref) bool {
	if h.Hunk == -1 {
		return m.File(FileRef{h.Commit, h.File}) != nil
	}
	return m.Hunk(h) != nil
}

// ByFile reports whether the review is picked file by file: leaving out
// a hunk leaves out its file.
func (m *Review) ByFile() bool { return m.mode == pickFiles }

// SetHunk accepts hunk h, or leaves it out (Hunk -1: a file without
// hunks). Accepting a hunk accepts all its lines; in a review picked
// file by file, it is the hunk's whole file that is set.
func (m *Review) SetHunk(h Ref, accept bool) error {
	if err := m.canPick(); err != nil {
		return err
	}
	if err := m.pickable(h); err != nil {
		return err
	}
	k := m.key(h)
	delete(m.leftLines, k)
	if accept {
		delete(m.left, k)
	} else {
		m.left[k] = true
	}
	return nil
}

// SetLine accepts, or leaves out, the changed line (its Changed number)
// of hunk h, as git add -p's edit does: a '-' line left out stays in the
// file, a '+' line left out is not added.
func (m *Review) SetLine(h Ref, changed int, accept bool) error {
	if err := m.canPick(); err != nil {
		return err
	}
	if m.mode != pickHunks {
		return ErrWholeFiles
	}
	if err := m.pickable(h); err != nil {
		return err
	}
	if m.File(FileRef{h.Commit, h.File}).Whole {
		return ErrWholeFile
	}
	hk := m.Hunk(h)
	n := countChanged(hk)
	if changed < 0 || changed >= n {
		return ErrNoSuchLine
	}
	lines := m.leftLines[h]
	if m.left[h] {
		// A hunk left out whole: accepting one line accepts that
		// line alone.
		delete(m.left, h)
		lines = map[int]bool{}
		for i := 0; i < n; i++ {
			lines[i] = true
		}
	}
	if lines == nil {
		lines = map[int]bool{}
	}
	if accept {
		delete(lines, changed)
	} else {
		lines[changed] = true
	}
	switch len(lines) {
	case 0:
		delete(m.leftLines, h)
	case n:
		delete(m.leftLines, h)
		m.left[h] = true
	default:
		m.leftLines[h] = lines
	}
	return nil
}

func countChanged(h *Hunk) int {
	n := 0
	for _, l := range h.Lines() {
		if l.Changed >= 0 {
			n++
		}
	}
	return n
}

// State is how much of a hunk (or a file) is accepted.
type State int

const (
	Accepted State = iota
	Partly
	LeftOut
)

// HunkState is how much of hunk h is accepted.
func (m *Review) HunkState(h Ref) State {
	k := m.key(h)
	switch {
	case m.left[k]:
		return LeftOut
	case len(m.leftLines[k]) > 0:
		return Partly
	}
	return Accepted
}

// LineAccepted says whether the changed line of hunk h is accepted.
func (m *Review) LineAccepted(h Ref, changed int) bool {
	k := m.key(h)
	return !m.left[k] && !m.leftLines[k][changed]
}

// LeftOut reports whether anything is left out.
func (m *Review) LeftOut() bool { return len(m.left) > 0 || len(m.leftLines) > 0 }

// Decide is the decision the review makes: a rejection with reason, or
// an approval: of the whole push when nothing is left out, else of the
// selection (approval.Pick, with Accept hunk by hunk or Paths file by
// file, as the gate checks them). The comments go with either.
func (m *Review) Decide(v approval.Verdict, reason string) (approval.Decision, error) {
	d := approval.Decision{Request: m.Request.ID, Verdict: v, By: "reviewer", Comments: m.Comments()}
	if v == approval.Reject {
		d.Reason = reason
		return d, nil
	}
	if !m.LeftOut() {
		d.Verdict = approval.Approve
		return d, nil
	}
	d.Verdict = approval.Pick
	switch m.mode {
	case pickHunks:
		d.Accept = m.accept()
		if len(d.Accept) == 0 {
			return approval.Decision{}, ErrNothingAccepted
		}
	case pickFiles:
		for fi, f := range m.Commits[0].Files {
			if !m.left[Ref{0, fi, -1}] {
				d.Paths = append(d.Paths, f.Path)
			}
		}
		if len(d.Paths) == 0 {
			return approval.Decision{}, ErrNothingAccepted
		}
	default:
		return approval.Decision{}, ErrNotPickable
	}
	return d, nil
}

// accept is the selection as the gate takes it: each commit with
// anything accepted, in the push's order, each file named as the line
// prompt names it (a file without hunks Whole; the others by their
// accepted hunks, every one named even when all are, by content id).
func (m *Review) accept() []approval.Accepted {
	var out []approval.Accepted
	for ci, c := range m.Commits {
		if c.Base {
			continue // it lands whatever is picked
		}
		acc := approval.Accepted{Commit: c.ID}
		for fi, f := range c.Files {
			if len(f.Hunks) == 0 || f.Whole {
				if !m.left[Ref{ci, fi, -1}] {
					acc.Files = append(acc.Files, approval.AcceptedFile{Path: f.Path, Whole: true})
				}
				continue
			}
			af := approval.AcceptedFile{Path: f.Path}
			for hi := range f.Hunks {
				ref := Ref{ci, fi, hi}
				if m.left[ref] {
					continue
				}
				ah := approval.AcceptedHunk{Index: hi, ID: f.Hunks[hi].ID()}
				if left := m.leftLines[ref]; len(left) > 0 {
					for i := 0; i < countChanged(&f.Hunks[hi]); i++ {
						if !left[i] {
							ah.Lines = append(ah.Lines, i)
						}
					}
				}
				af.Hunks = append(af.Hunks, ah)
			}
			if len(af.Hunks) > 0 {
				acc.Files = append(acc.Files, af)
			}
		}
		if len(acc.Files) > 0 {
			out = append(out, acc)
		}
	}
	return out
}
