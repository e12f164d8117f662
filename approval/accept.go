package approval

import (
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/hunk"
	"github.com/airlock-dev/airlock/internal/shortid"
)

// CheckAccept checks a hunk-by-hunk selection against the request it
// answers, as the gate does before it asks the push for the commits (a
// reviewer's client may check first, to say at once what is wrong): every commit it names is one of the request's, every path one
// its commit changes, every hunk named by its place and by the content id
// of the text shown there, every line one of that hunk's changed lines,
// and nothing named twice. A selection that passes names exactly text the
// reviewer was shown.
func CheckAccept(req *Request, accept []Accepted) error {
	commits := map[string]*CommitInfo{}
	for i := range req.Commits {
		commits[req.Commits[i].ID.String()] = &req.Commits[i]
	}
	seen := map[string]bool{}
	for _, a := range accept {
		c := commits[a.Commit.String()]
		switch {
		case c == nil:
			return fmt.Errorf("approval: commit %s is not one of this push's; accept only the commits the request lists", shortid.Hash(a.Commit))
		case seen[a.Commit.String()]:
			return fmt.Errorf("approval: commit %s is accepted twice; name each commit once, with all its files", shortid.Hash(a.Commit))
		case len(a.Files) == 0:
			return fmt.Errorf("approval: commit %s is named with no file accepted; leave it out of the selection instead", shortid.Hash(a.Commit))
		case len(c.Files) == 0 || !req.Pickable:
			return fmt.Errorf("approval: the commits of this push are too large to pick from hunk by hunk; pick whole files instead")
		}
		seen[a.Commit.String()] = true
		if err := checkAcceptedFiles(c, a.Files); err != nil {
			return err
		}
	}
	return nil
}

func checkAcceptedFiles(c *CommitInfo, files []AcceptedFile) error {
	diffs := map[string]*FileDiff{}
	for i := range c.Files {
		diffs[c.Files[i].Path] = &c.Files[i]
	}
	seen := map[string]bool{}
	for _, f := range files {
		d := diffs[f.Path]
		where := fmt.Sprintf("%q in commit %s", f.Path, shortid.Hash(c.ID))
		switch {
		case d == nil:
			return fmt.Errorf("approval: commit %s does not change %q; accept only the files it lists", shortid.Hash(c.ID), f.Path)
		case seen[f.Path]:
			return fmt.Errorf("approval: %s is accepted twice; name each file once", where)
		case f.Whole && len(f.Hunks) > 0:
			return fmt.Errorf("approval: %s is accepted whole and by hunks; give one or the other", where)
		case !f.Whole && len(f.Hunks) == 0:
			return fmt.Errorf("approval: %s is named with no hunk; accept it whole, name its hunks, or leave it out", where)
		case !f.Whole && len(d.Hunks) == 0:
			return fmt.Errorf("approval: %s has no hunks (binary, or a mode or type change alone); accept it whole or leave it out", where)
		}
		seen[f.Path] = true
		if err := checkAcceptedHunks(d, f.Hunks, where); err != nil {
			return err
		}
	}
	return nil
}

func checkAcceptedHunks(d *FileDiff, hunks []AcceptedHunk, where string) error {
	seen := map[int]bool{}
	for _, h := range hunks {
		switch {
		case h.Index < 0 || h.Index >= len(d.Hunks):
			return fmt.Errorf("approval: %s has %d hunks (0 to %d); there is no hunk %d", where, len(d.Hunks), len(d.Hunks)-1, h.Index)
		case seen[h.Index]:
			return fmt.Errorf("approval: hunk %d of %s is accepted twice", h.Index, where)
		case h.ID != HunkID(d.Hunks[h.Index]):
			return fmt.Errorf("approval: hunk %d of %s is not the hunk the request shows there (its id is %s, the selection says %q); select from the request as it is",
				h.Index, where, HunkID(d.Hunks[h.Index]), h.ID)
		}
		seen[h.Index] = true
		if len(h.Lines) == 0 {
			continue
		}
		changed, err := hunk.Changed(d.Hunks[h.Index])
		if err != nil {
			return fmt.Errorf("approval: hunk %d of %s: %w", h.Index, where, err)
		}
		lines := map[int]bool{}
		for _, n := range h.Lines {
			switch {
			case n < 0 || n >= len(changed):
				return fmt.Errorf("approval: hunk %d of %s has %d changed lines (0 to %d); there is no line %d", h.Index, where, len(changed), len(changed)-1, n)
			case lines[n]:
				return fmt.Errorf("approval: line %d of hunk %d of %s is accepted twice", n, h.Index, where)
			}
			lines[n] = true
		}
	}
	return nil
}

// errPickBoth: a pick names files and hunks at once.
var errPickBoth = errors.New("approval: a pick names either files (paths) or hunks (accept), not both")

// ledgerCommits is what the ledger keeps of a request's commits: ids and
// messages, not their diffs (no file contents go into the ledger).
func ledgerCommits(cs []CommitInfo) []CommitInfo {
	out := make([]CommitInfo, len(cs))
	for i, c := range cs {
		out[i] = CommitInfo{ID: c.ID, Message: c.Message}
	}
	return out
}

// heldBytes is what a pending request holds of diffs: its diff and its
// commits' own.
func heldBytes(req *Request) int {
	n := len(req.Diff)
	for _, c := range req.Commits {
		for _, f := range c.Files {
			n += len(f.Header)
			for _, h := range f.Hunks {
				n += len(h)
			}
		}
	}
	return n
}

// checkPick checks a pick (of paths, or of hunks: accept) against the
// request t waits on.
func checkPick(t *Ticket, paths []string, accept []Accepted) error {
	switch {
	case !t.req.Pickable:
		return errors.New("approval: files cannot be picked for this push; approve or reject it whole")
	case len(accept) > 0 && len(paths) > 0:
		return errPickBoth
	case len(accept) > 0:
		return CheckAccept(t.req, accept)
	}
	if len(paths) == 0 {
		return errors.New("approval: no file picked; reject the push instead")
	}
	in := map[string]bool{}
	for _, f := range t.req.Files {
		in[f.Path] = true
	}
	named := map[string]bool{}
	for _, p := range paths {
		switch {
		case !in[p]:
			return fmt.Errorf("approval: %q is not a file of this push", p)
		case named[p]:
			// Counted twice, a pick of some files would look like one of
			// all of them, and be approved whole.
			return fmt.Errorf("approval: %q is picked twice; name each file once", p)
		}
		named[p] = true
	}
	return nil
}
