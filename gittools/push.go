package gittools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// maxRequestDiff bounds the diff a request carries to the reviewer.
const maxRequestDiff = 32 << 20

func gitPush(ctx context.Context, s *Session, a pushArgs, p Progress) (string, error) {
	spec, err := s.resolveSpec(a.Target)
	if err != nil {
		return "", err
	}
	t, ref, err := s.targetRef(ctx, spec)
	if err != nil {
		return "", err
	}
	commits := s.area.Commits()
	if len(commits) == 0 {
		return "", &ToolError{Msg: "nothing is staged: git_stage your changes first, then git_push the commit it returns"}
	}
	c := commits[len(commits)-1]
	if a.CommitID != "" {
		if c, err = s.area.Lookup(a.CommitID); err != nil {
			return "", err
		}
	}
	head, err := t.Head(ctx, ref)
	if err != nil {
		return "", err
	}
	var notes []string
	if !head.IsZero() && head != c.Base {
		// The target moved since the pull (or the sandbox never pulled):
		// rebase onto it, in memory, if nothing overlaps. The result is a
		// new commit, so it gets its own review.
		if _, err := t.Fetch(ctx, ref, s.area.Pulled(), s.store); err != nil {
			return "", err
		}
		res, err := s.area.Rebase(head)
		if err != nil {
			return "", err
		}
		nu, ok := res.Rebuilt[c.ID]
		if !ok {
			return "", fmt.Errorf("rebasing onto %s lost commit %s", head.String()[:7], c.ID.String()[:7])
		}
		notes = append(notes, fmt.Sprintf("%s moved to %s since your pull; your commit was rebased onto it and is now %s (files there came in: %s)",
			targets.BranchName(ref), head.String()[:7], nu.String()[:7], listOrNone(res.Updated)))
		if c, err = s.area.Lookup(nu.String()); err != nil {
			return "", err
		}
	}
	req, err := s.request(ctx, spec, t, ref, head, c)
	if err != nil {
		return "", err
	}
	tk, err := s.gate.Submit(req, func(paths []string) (plumbing.Hash, error) {
		pc, err := s.area.Pick(c.ID, paths)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		return pc.ID, nil
	})
	if err != nil {
		return "", err
	}
	id := tk.Request().ID
	s.mu.Lock()
	s.tickets[id] = tk
	s.mu.Unlock()

	if !waitDecision(ctx, tk, s.opts.Timeout, p) {
		if ctx.Err() != nil {
			// The client went away: nobody is waiting for this push.
			s.gate.Withdraw(id, "the worker's client disconnected")
			s.forget(id)
			return "", ctx.Err()
		}
		return strings.Join(append(notes, fmt.Sprintf("the push of %s to %s (%s) is still waiting for a reviewer (request %s). "+
			"Call git_push commit_id=%s again to keep waiting: the reviewer is not asked twice. A reviewer answers with `airlock review` in a terminal.",
			c.ID.String()[:7], t.Describe(), targets.BranchName(ref), id, c.ID.String()[:7])), "\n"), nil
	}
	s.forget(id)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	dec, grant, err := tk.Wait(done)
	if err != nil {
		return "", &ToolError{Msg: strings.Join(append(notes, err.Error()), "\n")}
	}
	var landedNote string
	err = t.Push(ctx, grant, s.store)
	var stale *targets.WorktreeError
	if errors.As(err, &stale) {
		// The branch moved: the push landed. Only the files of the
		// working tree lag behind, which recovery finishes.
		s.gate.RecordPush(grant, "pushed", err)
		landedNote, err = "\nnote: "+err.Error(), nil
	} else if err == nil {
		s.gate.RecordPush(grant, "pushed", nil)
	}
	if err != nil {
		s.gate.RecordPush(grant, "failed", err)
		var moved *targets.MovedError
		if errors.As(err, &moved) {
			return "", &ToolError{Msg: err.Error() + "; call git_push again: it rebases onto the new commit and asks again"}
		}
		return "", err
	}
	if err := s.area.Advance(grant.New()); err != nil {
		return "", err
	}
	// The pushed commit is the base now, and where it lives is where
	// later pulls update from.
	s.mu.Lock()
	s.base, s.baseRef = spec, ref
	s.mu.Unlock()
	var out string
	if dec.Verdict == approval.Pick {
		out = fmt.Sprintf("pushed %s to %s (%s) with only the files the reviewer picked: %s; the other changes are unstaged in the sandbox",
			grant.New().String()[:7], t.Describe(), targets.BranchName(ref), strings.Join(dec.Paths, ", "))
	} else {
		out = fmt.Sprintf("pushed %s to %s (%s): %s, +%d -%d", grant.New().String()[:7], t.Describe(), targets.BranchName(ref),
			fileCount(len(req.Files)), req.Added, req.Deleted)
	}
	return strings.Join(append(notes, out), "\n") + landedNote, nil
}

func (s *Session) forget(id string) {
	s.mu.Lock()
	delete(s.tickets, id)
	s.mu.Unlock()
}

// waitDecision waits for tk's decision, reporting progress every few
// seconds; false when the time ran out or ctx ended first.
func waitDecision(ctx context.Context, tk *approval.Ticket, timeout time.Duration, p Progress) bool {
	start := time.Now()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	p(0, timeout.Seconds(), "waiting for a reviewer to approve the push (airlock review)")
	for {
		select {
		case <-tk.Done():
			return true
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case <-tick.C:
			el := time.Since(start)
			p(el.Seconds(), timeout.Seconds(), fmt.Sprintf("waiting for a reviewer (%s so far)", el.Round(time.Second)))
		}
	}
}

// request describes pushing commit c over head for the reviewer.
func (s *Session) request(ctx context.Context, spec *TargetSpec, t targets.Target, ref string, head plumbing.Hash, c *staging.Commit) (*approval.Request, error) {
	var oldTree plumbing.Hash
	if !head.IsZero() {
		hc, err := object.GetCommit(s.store, head)
		if err != nil {
			return nil, fmt.Errorf("the target's commit %s is not in the sandbox: %w", head.String()[:7], err)
		}
		oldTree = hc.TreeHash
	} else if co, ok := t.(checkedOuter); ok && writesFiles(ctx, co, ref) {
		// An unborn branch checked out in a working tree: the push writes
		// every file of the commit there, so the reviewer sees every one.
	} else if bc, err := object.GetCommit(s.store, c.Base); err == nil && s.baseFrom(spec) {
		// A new branch on the target the base came from shows what the
		// worker changed since that commit, as git shows the commits a
		// new branch adds, not every file of the repository.
		oldTree = bc.TreeHash
	}
	patch, err := s.store.DiffPatch(oldTree, c.Tree)
	if err != nil {
		return nil, err
	}
	req := &approval.Request{
		Worker: s.w.Name, Target: t.ID(), Describe: t.Describe(), Ref: ref,
		NewRef: head.IsZero(), Old: head, New: c.ID, Tree: c.Tree,
	}
	if db, ok := t.(targets.DefaultBrancher); ok {
		if b, err := db.DefaultBranch(ctx); err == nil {
			req.DefaultBranch = b
		}
	}
	for _, sc := range s.area.Commits() {
		req.Commits = append(req.Commits, approval.CommitInfo{ID: sc.ID, Message: sc.Message})
		if sc.ID == c.ID {
			break
		}
	}
	// A type change is two file patches of one path: one FileChange.
	idx := map[string]int{}
	old, nu := map[string]plumbing.Hash{}, map[string]plumbing.Hash{}
	for _, f := range patch.Files {
		i, ok := idx[f.Path]
		if !ok {
			req.Files = append(req.Files, approval.FileChange{Path: f.Path})
			i = len(req.Files) - 1
			idx[f.Path] = i
		}
		fc := &req.Files[i]
		if !f.OldHash.IsZero() {
			fc.OldMode, old[f.Path] = f.OldMode, f.OldHash
		}
		if !f.NewHash.IsZero() {
			fc.NewMode, nu[f.Path] = f.NewMode, f.NewHash
		}
		fc.Binary = fc.Binary || f.Binary
		fc.Added += f.Added
		fc.Deleted += f.Deleted
		req.Added += f.Added
		req.Deleted += f.Deleted
	}
	for i := range req.Files {
		fc := &req.Files[i]
		h := nu[fc.Path]
		switch {
		case old[fc.Path].IsZero():
			fc.Op = approval.OpCreate
		case h.IsZero():
			fc.Op, h = approval.OpDelete, old[fc.Path]
		default:
			fc.Op = approval.OpUpdate
		}
		fc.Size, _ = s.store.EncodedObjectSize(h)
	}
	diff := newCapWriter(maxRequestDiff)
	patch.Format(diff, false)
	req.Diff = diff.Text("the rest is too large to show here")
	req.DiffTruncated = diff.Truncated()
	req.Pickable = len(req.Files) > 1
	req.Flags = append(droppedFlags(s.area.Dropped()), approval.Assess(req, s.opts.Rules, func(p string, newSide bool) ([]byte, bool) {
		h := old[p]
		if newSide {
			h = nu[p]
		}
		if h.IsZero() {
			return nil, false
		}
		data, err := s.store.ReadBlob(h)
		return data, err == nil
	})...)
	return req, nil
}

// checkedOuter is a target that can tell whether a branch is checked out
// in a working tree (targets.Local).
type checkedOuter interface {
	CheckedOut(ctx context.Context, ref string) (bool, error)
}

func writesFiles(ctx context.Context, t checkedOuter, ref string) bool {
	ok, err := t.CheckedOut(ctx, ref)
	return ok || err != nil // when in doubt, show everything
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

// baseFrom reports whether the sandbox's base was pulled from spec's
// target, which therefore holds it.
func (s *Session) baseFrom(spec *TargetSpec) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base != nil && specKey(s.base) == specKey(spec)
}
