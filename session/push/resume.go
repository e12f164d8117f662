package push

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/session/record"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
	"github.com/go-git/go-git/v5/plumbing"
)

// ResumeLocked takes up the pushes a saved session had in flight (recs),
// whose targets open returns (opened before the lock was taken). It says
// what became of those a crash interrupted (ended) and which requests wait
// for a reviewer again (waiting), for the session's Recovered.
func (b *Book) ResumeLocked(ctx context.Context, recs []Rec, open func(*worker.TargetSpec) (targets.Target, error)) (ended, waiting []string) {
	for _, pr := range recs {
		commit, _ := record.HashOf(pr.Commit)
		old, _ := record.HashOf(pr.Old)
		r := b.h.Repo(pr.Repo)
		if pr.Spec == nil || r == nil {
			continue
		}
		t, err := open(pr.Spec)
		if err != nil {
			lost := b.recordOutcome(pr.ID, "", pr.Ref, old, commit, "failed", fmt.Sprintf("the session resumed but could not open the target: %v", err))
			ended = append(ended, fmt.Sprintf("The push of %s (request %s) could not be taken up again: %v; git_push it again.%s", shortid.Hash(commit), pr.ID, err, lost))
			continue
		}
		branch := targets.BranchName(pr.Ref)
		if pushState(pr.State) != requested {
			// A crash cut it while it landed: the branch says how it ended.
			if targets.Landed(ctx, t, pr.Ref, commit, targets.ErrInterrupted).Landed {
				lost := b.recordOutcome(pr.ID, t.ID(), pr.Ref, old, commit, "pushed", "interrupted by a restart after the branch moved")
				if lost == "" {
					// As a push that lands does before it answers: the
					// head, now with this outcome, kept in the target.
					// Under the lock, as the resume's other calls to the
					// target (Head, opening it) are: nothing answers
					// before the resume ends.
					if err := b.h.RecordLedgerHead(ctx, t); err != nil {
						lost = fmt.Sprintf(" The ledger's head could not be kept in the target for `airlock ledger verify` to check against: %v.", err)
					}
				}
				b.advanceLocked(r, commit, pr.Spec, pr.Ref, t)
				ended = append(ended, fmt.Sprintf("The push of %s to %s (%s), interrupted by the restart, had landed: it is pushed.%s", shortid.Hash(commit), t.Describe(), branch, lost))
			} else if dec, ok, err := b.cfg.Gate.Decided(pr.ID); ok && err == nil && dec.Approved() {
				// Cut before the branch moved: the approval stands, and
				// the push lands on it now (nobody is asked again).
				ended = append(ended, b.resumeDecidedLocked(ctx, pr, r, t, dec, nil))
			} else {
				lost := b.recordOutcome(pr.ID, t.ID(), pr.Ref, old, commit, "failed", "interrupted by a restart before the branch moved")
				ended = append(ended, fmt.Sprintf("The push of %s to %s (%s) was interrupted by the restart before it landed; nothing was pushed: git_push it again.%s", shortid.Hash(commit), t.Describe(), branch, lost))
			}
			continue
		}
		if dec, ok, err := b.cfg.Gate.Decided(pr.ID); ok || err != nil {
			// Decided before the restart: carried out, never asked again.
			ended = append(ended, b.resumeDecidedLocked(ctx, pr, r, t, dec, err))
			continue
		}
		// The resumed attempt's one read of the target.
		facts, herr := targets.ReadFacts(ctx, t, branch)
		c, err := r.Area().Lookup(commit.String())
		if err != nil || herr != nil {
			why := "its commit is no longer staged"
			if herr != nil {
				why = herr.Error()
			}
			lost := b.recordOutcome(pr.ID, t.ID(), pr.Ref, old, commit, "withdrawn", "the session resumed, but "+why)
			ended = append(ended, fmt.Sprintf("The request %s to push %s was withdrawn at the restart: %s.%s", pr.ID, shortid.Hash(commit), why, lost))
			continue
		}
		p := &push{r: r, spec: pr.Spec, t: t, ref: pr.Ref, facts: facts, notes: pr.Notes, retries: pr.Retries, picks: make(chan *approval.PickAsk), done: make(chan struct{})}
		for _, k := range pr.Keys {
			if h, err := record.HashOf(k); err == nil {
				p.keys = append(p.keys, pushKey{t.ID(), pr.Ref, h})
			}
		}
		if head := facts.Head; head == old {
			err = b.reofferLocked(p, c, pr.ID)
		} else {
			// The branch moved while airlock was down: the old request
			// compares with a head that is gone. Ask anew on the new one.
			if lost := b.recordOutcome(pr.ID, t.ID(), pr.Ref, old, commit, "withdrawn", "the session resumed and the branch had moved; asked again"); lost != "" {
				ended = append(ended, fmt.Sprintf("The request %s to push %s was asked again on the moved branch.%s", pr.ID, shortid.Hash(commit), lost))
			}
			err = b.askLocked(ctx, p, c, facts.Head)
		}
		if err != nil {
			ended = append(ended, fmt.Sprintf("The request %s to push %s could not be offered again: %v; git_push it again.", pr.ID, shortid.Hash(commit), err))
			continue
		}
		waiting = append(waiting, p.req.ID)
		go b.drive(p)
	}
	return ended, waiting
}

// recordOutcome records in the ledger how a push a restart interrupted
// ended. The ledger that cannot take it is named in the returned sentence,
// which Recovered.Ended carries to the worker and the operator: the
// outcome is then known only from the branch.
func (b *Book) recordOutcome(id, target, ref string, old, new plumbing.Hash, result, note string) string {
	err := b.cfg.Gate.RecordPush(approval.PushRecord{Request: id, Target: target, Ref: ref, Old: old, New: new, Result: result, Recovered: note})
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" The ledger could not record this (%v): the operator must free space for it or make it writable.", err)
}

// reofferLocked submits p's request again under its old id.
func (b *Book) reofferLocked(p *push, c *staging.Commit, id string) error {
	req, err := b.request(p, c)
	if err != nil {
		return err
	}
	b.sinceLocked(p, nil, req)
	tk, err := b.cfg.Gate.Resubmit(req, id, p.picks)
	if err != nil {
		return err
	}
	b.requestedLocked(p, c, tk)
	return nil
}
