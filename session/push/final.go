package push

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/session/record"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// A decision in the ledger is final. A push a restart cut after its
// reviewer decided (the ledger holds the decision; the session's record
// still says requested) is not offered again: the resume carries the
// decision out. An approval lands the approved commit; a pick makes the
// pick's commits again from the decision's record (its selection, edited
// messages and time: staging's AcceptAt and PickAt make the same commits
// of the same choice at the same time), checks they are the ones the
// decision names, and lands them; a rejection is told to the worker as a
// live one is. Nothing is appended for the request, and no reviewer is
// asked.

// resumeDecidedLocked takes up pr, whose request the ledger holds dec of
// (derr: the ledger could not say). It returns what the worker is told.
func (b *Book) resumeDecidedLocked(ctx context.Context, pr Rec, r Repo, t targets.Target, dec approval.Decision, derr error) string {
	commit, _ := record.HashOf(pr.Commit)
	old, _ := record.HashOf(pr.Old)
	if derr != nil {
		// Never offered again while the ledger cannot say it was not
		// decided: a second decision of it must not be possible.
		lost := b.recordOutcome(pr.ID, t.ID(), pr.Ref, old, commit, "withdrawn", "the session resumed, but the ledger could not say whether it was decided")
		return fmt.Sprintf("The request %s to push %s was withdrawn at the restart: %v.%s Call git_push again once the ledger can be read.", pr.ID, shortid.Hash(commit), derr, lost)
	}
	by := termsafe.Line(dec.By)
	facts, herr := targets.ReadFacts(ctx, t, targets.BranchName(pr.Ref))
	if herr != nil && dec.Approved() {
		lost := b.recordOutcome(pr.ID, t.ID(), pr.Ref, old, dec.New, "failed", "the session resumed, but the target could not be read: "+herr.Error())
		return fmt.Sprintf("The push of request %s, which %s approved before the restart, could not be taken up again: %v; nothing was pushed: git_push it again.%s", pr.ID, by, herr, lost)
	}
	// The decision is of the request over old: a branch that moved since
	// is the landing's to find (the push rebases, and goes ahead on this
	// approval when it shows the same changes, as a live one does).
	facts.Ref, facts.Head = pr.Ref, old
	p := &push{r: r, spec: pr.Spec, t: t, ref: pr.Ref, facts: facts, notes: pr.Notes, retries: pr.Retries, picks: make(chan *approval.PickAsk), done: make(chan struct{})}
	for _, k := range pr.Keys {
		if h, err := record.HashOf(k); err == nil {
			p.keys = append(p.keys, pushKey{t.ID(), pr.Ref, h})
		}
	}
	c, err := r.Area().Lookup(commit.String())
	if err != nil && dec.Verdict == approval.Pick {
		// The session was saved after the pick's commits were made: they
		// are staged already.
		c, err = r.Area().Lookup(dec.New.String())
	}
	if err == nil && dec.Verdict == approval.Pick && c.ID == dec.New && !slices.Contains(pr.Keys, dec.New.String()) {
		// The pick's commit is named by the ledger's record, which the
		// reviewer did not sign: it is taken only as one this push's own
		// pick made, which the session's record keeps.
		lost := b.recordOutcome(pr.ID, t.ID(), pr.Ref, old, dec.New, "failed", "the session resumed, but the pick's commit in the ledger is not one this push made")
		return fmt.Sprintf("The pick %s made of request %s before the restart could not be taken up again: the ledger names a commit (%s) this push did not make; nothing was pushed: git_push again.%s", by, pr.ID, shortid.Hash(dec.New), lost)
	}
	if err != nil {
		if dec.Approved() {
			lost := b.recordOutcome(pr.ID, t.ID(), pr.Ref, old, dec.New, "failed", "the session resumed, but the approved commit is no longer staged")
			return fmt.Sprintf("The push of request %s, which %s approved before the restart, could not be taken up again: its commit is no longer staged; nothing was pushed: git_push it again.%s", pr.ID, by, lost)
		}
		return fmt.Sprintf("The request %s to push %s was rejected by %s before the restart: %s", pr.ID, shortid.Hash(commit), by, rejectedWhy(dec))
	}
	req, err := b.request(p, c)
	if err != nil {
		return fmt.Sprintf("The request %s, decided by %s before the restart, could not be taken up again: %v; nothing was pushed: git_push it again.", pr.ID, by, err)
	}
	tk, err := b.cfg.Gate.Resubmit(req, pr.ID, p.picks)
	if err != nil || !tk.Final() {
		if err == nil {
			err = fmt.Errorf("the gate offered it again")
			_ = b.cfg.Gate.Withdraw(pr.ID, "the resume found it decided in the ledger") // never asked twice
		}
		return fmt.Sprintf("The request %s, decided by %s before the restart, could not be taken up again: %v; nothing was pushed: git_push it again.", pr.ID, by, err)
	}
	b.requestedLocked(p, c, tk)
	if dec.Verdict == approval.Pick && c.ID != dec.New {
		if err := b.repickLocked(p, dec); err != nil {
			b.endLocked(p, Result{}, err)
			lost := b.recordOutcome(pr.ID, t.ID(), pr.Ref, old, dec.New, "failed", "the session resumed, but the pick could not be made again: "+err.Error())
			return fmt.Sprintf("The pick %s made of request %s before the restart could not be made again: %v; nothing was pushed: git_push again.%s", by, pr.ID, err, lost)
		}
	}
	go b.drive(p)
	if !dec.Approved() {
		return fmt.Sprintf("The request %s to push %s was rejected by %s before the restart (not asked again): %s", pr.ID, shortid.Hash(commit), by, rejectedWhy(dec))
	}
	return fmt.Sprintf("The request %s to push %s was decided by %s (%s) before the restart: it goes ahead on that decision, not asked again; call git_push with the commit to hear how it ended.",
		pr.ID, shortid.Hash(commit), by, dec.Verdict)
}

// repickLocked makes again, on p's request, the commits of the pick dec
// records, dated as they were: they must be the very commits dec names.
func (b *Book) repickLocked(p *push, dec approval.Decision) error {
	pc, made, err := makePick(p, dec.Accept, dec.Paths, dec.Time)
	if err != nil {
		return err
	}
	want := dec.Commits
	if len(want) == 0 {
		want = []plumbing.Hash{dec.New}
	}
	if !slices.Equal(made, want) {
		return fmt.Errorf("the commits made again (%s) are not those the decision names (%s)", hashes(made), hashes(want))
	}
	p.commit = pc
	key := pushKey{p.t.ID(), p.ref, pc.ID}
	p.keys = append(p.keys, key)
	b.byCommit[key] = p
	return nil
}

// makePick makes the commits of a pick of p's commit, dated at: of the
// hunks and lines accept names, or else of the files paths names. It
// returns the last commit made and every one, oldest first. A live
// decision (pickLocked) and a resumed one (repickLocked) make them alike.
func makePick(p *push, accept []approval.Accepted, paths []string, at time.Time) (*staging.Commit, []plumbing.Hash, error) {
	if len(accept) == 0 {
		pc, err := p.r.Area().PickAt(p.commit.ID, withRenamedFrom(p.req, paths), at)
		if err != nil {
			return nil, nil, err
		}
		return pc, []plumbing.Hash{pc.ID}, nil
	}
	res, err := p.r.Area().AcceptAt(p.commit.ID, selections(accept), at)
	if err != nil {
		return nil, nil, err
	}
	var made []plumbing.Hash
	for _, c := range res.Made {
		made = append(made, c.ID)
	}
	p.accepted, p.dropped = &res, dropped(p.req.Commits, res.From)
	return res.Made[len(res.Made)-1], made, nil
}

// withRenamedFrom is paths with, for each renamed file among them, the
// path it was renamed from: the reviewer picked the rename as shown, so
// the old name goes too (a copy's source stays).
func withRenamedFrom(req *approval.Request, paths []string) []string {
	if req == nil {
		return paths
	}
	picked := map[string]bool{}
	for _, p := range paths {
		picked[p] = true
	}
	out := slices.Clone(paths)
	for _, f := range req.Files {
		if f.Op == change.Rename && picked[f.Path] && !picked[f.From] {
			picked[f.From] = true
			out = append(out, f.From)
		}
	}
	return out
}

func hashes(hs []plumbing.Hash) string {
	var s []string
	for _, h := range hs {
		s = append(s, shortid.Hash(h))
	}
	return listOrNone(s)
}

// rejectedWhy is a rejection's reason as the worker reads it.
func rejectedWhy(dec approval.Decision) string {
	if dec.Reason == "" {
		return "no reason given; change it before pushing again."
	}
	return termsafe.Line(dec.Reason)
}
