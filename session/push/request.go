package push

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/textcap"
	"github.com/airlock-dev/airlock/staging"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// request describes pushing commit c over head for the reviewer.
func (b *Book) request(p *push, c *staging.Commit) (*approval.Request, error) {
	r, t, head := p.r, p.t, p.facts.Head
	var oldTree, fork plumbing.Hash
	var forkRef string
	if !head.IsZero() {
		hc, err := object.GetCommit(b.cfg.Store, head)
		if err != nil {
			return nil, fmt.Errorf("the target's commit %s is not in the sandbox: %w", shortid.Hash(head), err)
		}
		oldTree = hc.TreeHash
	} else if p.facts.WritesFiles {
		// An unborn branch checked out in a working tree: the push writes
		// every file of the commit there, so the reviewer sees every one.
	} else if fork, forkRef, oldTree = b.forkLocked(p, c); !fork.IsZero() {
		// A new branch on a target that holds the base shows what the
		// worker changed since that commit, as git shows the commits a
		// new branch adds, not every file of the repository (fork.go).
	}
	req := &approval.Request{
		Worker: b.cfg.Worker, Session: b.cfg.Session, Repo: r.Name(), Target: t.ID(), Describe: t.Describe(), Ref: p.ref,
		NewRef: head.IsZero(), Old: head, New: c.ID, Tree: c.Tree, DefaultBranch: p.facts.DefaultBranch, RefRole: p.facts.Role, Fork: fork, ForkRef: forkRef,
	}
	for _, sc := range r.Area().Commits() {
		req.Commits = append(req.Commits, approval.CommitInfo{ID: sc.ID, Message: sc.Message})
		if sc.ID == c.ID {
			break
		}
	}
	// A type change is two file patches of one path: one FileChange. The
	// patches come one at a time and are formatted as they come: the
	// request holds the diff's text up to its cap and each file's counts,
	// never the whole patch (a new branch shows every file).
	fs := fileSet{req: req, idx: map[string]int{}, old: map[string]plumbing.Hash{}, nu: map[string]plumbing.Hash{}}
	diff := textcap.New(maxRequestDiff)
	var buf bytes.Buffer
	err := b.cfg.Store.EachFilePatchRenamed(oldTree, c.Tree, func(f *staging.FilePatch) error {
		if err := f.Format(diff, &buf, false); err != nil {
			return err
		}
		fs.add(f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	old, nu := fs.old, fs.nu
	b.fileOps(req.Files, old, nu)
	b.binaryCopies(req.Files, oldTree, nu)
	var baseFlag []approval.Flag
	if head.IsZero() && fork.IsZero() && !c.Base.IsZero() {
		// An empty target, or one without the base: the base's commits
		// land too, and are shown as the base's (base.go).
		f, err := b.baseLocked(req, c, c.Base)
		if err != nil {
			return nil, err
		}
		baseFlag = append(baseFlag, f)
	}
	req.Diff = diff.Text("the rest is too large to show here")
	req.DiffTruncated = diff.Truncated()
	// A push of several commits, or of a file with several hunks, is
	// picked hunk by hunk from each commit's own diff; one whose diffs are
	// too large to carry is picked by file.
	byHunk, err := commitDiffs(r.Area(), req, maxCommitDiffs)
	if err != nil {
		return nil, err
	}
	req.Pickable = len(req.Files) > 1 || byHunk && hunkPickable(req)
	if !req.Pickable {
		for i := range req.Commits {
			req.Commits[i].Files = nil
		}
	}
	req.Flags = append(append(droppedFlags(r.Area().Dropped()), baseFlag...), approval.Assess(req, b.cfg.Rules, approval.Contents(b.cfg.Store, old, nu))...)
	approval.SortFlags(req.Flags)
	return req, nil
}

// fileSet gathers a request's files from its patches as they come: one
// FileChange a path, the blobs on each side by path (for fileOps and the
// risk checks' contents), the counts.
type fileSet struct {
	req     *approval.Request
	idx     map[string]int
	old, nu map[string]plumbing.Hash
}

func (s *fileSet) add(f *staging.FilePatch) {
	i, ok := s.idx[f.Path]
	if !ok {
		s.req.Files = append(s.req.Files, approval.FileChange{Path: f.Path})
		i = len(s.req.Files) - 1
		s.idx[f.Path] = i
	}
	fc := &s.req.Files[i]
	if f.From != "" {
		// A rename or copy: one file, its old side the file it is
		// made from (what Contents reads for it).
		fc.Op, fc.From, fc.Similarity = f.Op, f.From, f.Similarity
	}
	if !f.OldHash.IsZero() {
		fc.OldMode, s.old[f.Path] = f.OldMode, f.OldHash
	}
	if !f.NewHash.IsZero() {
		fc.NewMode, s.nu[f.Path] = f.NewMode, f.NewHash
	}
	fc.Binary = fc.Binary || f.Binary
	if f.Unavailable != "" {
		fc.Unavailable = f.Unavailable
	}
	fc.Added += f.Added
	fc.Deleted += f.Deleted
	s.req.Added += f.Added
	s.req.Deleted += f.Deleted
}

// fileOps sets each file's change and size from its blobs before (old)
// and after (nu) the push, by path.
func (b *Book) fileOps(files []approval.FileChange, old, nu map[string]plumbing.Hash) {
	for i := range files {
		fc := &files[i]
		h := nu[fc.Path]
		switch {
		case fc.From != "":
			// A rename or copy keeps the Op its patch says.
		case old[fc.Path].IsZero():
			fc.Op = change.Create
		case h.IsZero():
			fc.Op, h = change.Delete, old[fc.Path]
		default:
			fc.Op = change.Update
		}
		fc.Size, _ = b.cfg.Store.BlobSize(h)
	}
}

// droppedFlags tells the reviewer what of the pulled base the commit
// leaves out because no tree may carry it out of the sandbox.
func droppedFlags(dropped []staging.Refusal) []approval.Flag {
	if len(dropped) == 0 {
		return nil
	}
	var names []string
	for i, d := range dropped {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(dropped)-5))
			break
		}
		names = append(names, fmt.Sprintf("%s (%s)", d.Path, d.Rule))
	}
	return []approval.Flag{{Code: approval.FlagDropped, Severity: approval.High,
		Message: fmt.Sprintf("the pulled base holds %d entries that may not leave the sandbox, so this commit leaves them out (where the target has them, the push deletes them): %s",
			len(dropped), strings.Join(names, ", "))}}
}
