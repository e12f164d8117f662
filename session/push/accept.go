package push

import (
	"bytes"
	"errors"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/hunk"
	"github.com/airlock-dev/airlock/staging"
)

// maxCommitDiffs bounds the commits' own diffs a request carries for the
// reviewer to accept hunk by hunk. Above it a request carries none: such
// a push is picked by file (Pickable when it has more than one), never by
// hunk.
const maxCommitDiffs = 16 << 20

// errTooLarge stops reading the commits' diffs past their limit.
var errTooLarge = errors.New("the commits' diffs are too large to carry")

// commitDiffs fills each of req.Commits' Files with the commit's own diff
// against its parent, file by file, as the reviewer picks from it. It
// reports false, with no Files set, when they hold more than limit bytes
// together.
func commitDiffs(area *staging.Area, req *approval.Request, limit int) (bool, error) {
	total := 0
	var buf, text bytes.Buffer
	for i := range req.Commits {
		ci := &req.Commits[i]
		ci.Files = nil
		idx := map[string]int{}
		err := area.EachCommitPatch(ci.ID, func(f *staging.FilePatch) error {
			text.Reset()
			if err := f.Format(&text, &buf, false); err != nil {
				return err
			}
			if total += text.Len(); total > limit {
				return errTooLarge
			}
			header, hunks, err := hunk.Split(text.String())
			if err != nil {
				return err
			}
			if j, ok := idx[f.Path]; ok {
				// A type change (a file becoming a symlink, or the
				// reverse) is two patches of one path: one change,
				// accepted whole.
				fd := &ci.Files[j]
				fd.Header, fd.Hunks, fd.Op = fd.Header+strings.Join(fd.Hunks, "")+text.String(), nil, change.Update
				return nil
			}
			idx[f.Path] = len(ci.Files)
			ci.Files = append(ci.Files, approval.FileDiff{Path: f.Path, Op: f.Op, From: f.From, Header: header, Hunks: hunks,
				Binary: f.Binary || f.Unavailable != ""})
			return nil
		})
		if errors.Is(err, errTooLarge) {
			for j := range req.Commits {
				req.Commits[j].Files = nil
			}
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// hunkPickable reports whether a request with its commits' diffs has
// anything to pick hunk by hunk: more than one commit, or a file with
// more than one hunk.
func hunkPickable(req *approval.Request) bool {
	if len(req.Commits) > 1 {
		return true
	}
	for _, c := range req.Commits {
		for _, f := range c.Files {
			if len(f.Hunks) > 1 {
				return true
			}
		}
	}
	return false
}

// selections turns a reviewer's accepted hunks into the staging area's
// terms (the gate has checked them against the request).
func selections(accept []approval.Accepted) []staging.Selection {
	out := make([]staging.Selection, len(accept))
	for i, a := range accept {
		s := staging.Selection{Commit: a.Commit, Message: a.Message}
		for _, f := range a.Files {
			fs := staging.FileSelection{Path: f.Path, Whole: f.Whole}
			for _, h := range f.Hunks {
				fs.Hunks = append(fs.Hunks, staging.HunkSelection{Index: h.Index, Lines: h.Lines})
			}
			s.Files = append(s.Files, fs)
		}
		out[i] = s
	}
	return out
}

// Landed is one commit a push carried to its target.
type Landed struct {
	ID      plumbing.Hash
	Subject string
}

// landedCommits lists the commits from head back to (not including) stop
// or base, oldest first: what a push of head over stop carried.
func (b *Book) landedCommits(head, stop, base plumbing.Hash) []Landed {
	var out []Landed
	for h := head; !h.IsZero() && h != stop && h != base && len(out) < 1000; {
		c, err := object.GetCommit(b.cfg.Store, h)
		if err != nil {
			break
		}
		out = append(out, Landed{ID: h, Subject: firstLine(c.Message)})
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// dropped lists the commits of a request none of which made a commit.
func dropped(commits []approval.CommitInfo, from []plumbing.Hash) []Landed {
	var out []Landed
	for _, c := range commits {
		if !slices.Contains(from, c.ID) {
			out = append(out, Landed{ID: c.ID, Subject: firstLine(c.Message)})
		}
	}
	return out
}
