package push

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/crashpoint"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/targets"
)

// drive takes p from its decision to its end. It runs whether or not a
// call is waiting: an approved push lands even if the worker's call
// answered "still waiting" long ago. Each attempt calls the target at
// most three times: its facts were read when the request was made, then
// Push, then (once it landed) the ledger's head; a push that failed with
// an error that does not say whether it landed reads the head once more.
func (b *Book) drive(p *push) {
	ctx := context.Background()
	for {
		// A reviewer's pick comes to this goroutine, which makes the
		// commit of the picked files, while the request waits.
		b.mu.Lock()
		tk := p.tk
		b.mu.Unlock()
		select {
		case ask := <-p.picks:
			b.pick(p, ask)
			continue
		case <-tk.Done():
		}
		if b.reasked(p, tk) {
			// Another push landed on the branch and this one was asked
			// again on it (reaskLocked): wait on the new request.
			continue
		}
		switch b.hold(ctx, p, tk) {
		case holdAskedAgain:
			continue
		case holdEnded:
			return
		}
		dec, grant, ok := b.approved(p)
		if !ok {
			return
		}
		err := p.t.Push(ctx, grant, b.cfg.Store)
		crashpoint.Hit(crashpoint.TargetPushed)
		if out := targets.Landed(ctx, p.t, p.ref, grant.New(), err); out.Landed {
			b.landed(ctx, p, dec, grant, err, out.Worktree)
			return
		}
		if !b.retried(ctx, p, grant, err) {
			return
		}
	}
}

// approved takes p from its decision to landing: the ledger records
// "landing" and a durable session saves it before the target is touched.
// ok false: p ended (refused, withdrawn, or it could not be recorded).
func (b *Book) approved(p *push) (dec approval.Decision, grant approval.Grant, ok bool) {
	closed, cancel := context.WithCancel(context.Background())
	cancel()
	dec, grant, err := p.tk.Wait(closed)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		switch o := b.open[p.r.Name()]; {
		case dec.Verdict == approval.Reject && byPerson(dec):
			b.sawLocked(p, dec)
			if text := b.commentedLocked(p, dec); text != "" {
				err = fmt.Errorf("%w\n\n%s", err, text)
			}
			if advice := rejectedAdvice(p); advice != "" {
				err = fmt.Errorf("%w\n\n%s", err, advice)
			}
		case dec.By == "repeat-denied" && o != nil:
			// The same change again (a call that only meant to keep
			// waiting on a push the reviewer has since sent back): the
			// comments are what it needs to hear.
			err = fmt.Errorf("%w\n\n%s", err, o.Text)
		}
		b.finishLocked(p, Result{}, err, "after a push ended")
		return dec, grant, false
	}
	p.state = decided
	if len(dec.Comments) > 0 {
		p.comments = dec.Comments
	}
	if _, carried := b.published[grant.New()]; !carried && !stagedOrPublished(p.r, grant.New()) {
		// Pinning should make this impossible; never push a commit
		// the sandbox no longer stands behind.
		err := fmt.Errorf("%s changed while it was under review, so nothing was pushed; git_push again", shortid.Hash(grant.New()))
		b.finishLocked(p, Result{}, b.recordFailedLocked(grant, errors.New("the commit changed while under review"), err), "after a push ended")
		return dec, grant, false
	}
	p.state = landing
	if err := b.cfg.Gate.RecordPush(grant.Record("landing", nil)); err != nil {
		b.finishLocked(p, Result{}, fmt.Errorf("recording the push failed, so nothing was pushed: %w", err), "after a push ended")
		return dec, grant, false
	}
	crashpoint.Hit(crashpoint.LandingRecorded)
	// A durable session knows the push is landing before the target is
	// touched: after a crash, the branch says how it ended. One that
	// cannot say so does not touch it: a push that landed unknown to the
	// journal would be asked for again after a crash.
	if err := b.h.SaveLocked(); err != nil {
		err = fmt.Errorf("the session could not be saved before pushing, so nothing was pushed: %w; free space in the server's state directory (or make it writable), then call git_push again", err)
		b.finishLocked(p, Result{}, b.recordFailedLocked(grant, err, err), "after a push ended")
		return dec, grant, false
	}
	crashpoint.Hit(crashpoint.LandingSaved)
	return dec, grant, true
}

// landed ends p, whose push of grant landed (err: what the target said
// after it landed, worktree: the working tree it left behind).
func (b *Book) landed(ctx context.Context, p *push, dec approval.Decision, grant approval.Grant, err, worktree error) {
	b.mu.Lock()
	var notes []string
	if lerr := b.cfg.Gate.RecordPush(grant.Record("pushed", err)); lerr != nil {
		// The branch holds it whatever the ledger says: the worker is
		// told it landed, the operator that the ledger lacks it.
		b.h.Warn("the push of %s to %s landed, but the ledger could not record it: %v", shortid.Hash(grant.New()), p.t.Describe(), lerr)
		notes = append(notes, fmt.Sprintf("the push landed, but the ledger could not record it (%v); the operator was told", lerr))
	}
	var landed []Landed
	if p.accepted != nil {
		// What went is read from the commits themselves: a rebase
		// after the pick (the branch moved) made them anew.
		landed = b.landedCommits(grant.New(), grant.Old(), p.r.Area().Base())
	}
	b.advanceLocked(p.r, grant.New(), p.spec, p.ref, p.t)
	for _, k := range p.keys {
		// The commits this push was asked for before a rebase or a pick
		// made them grant.New(): pushed too, under that id.
		if _, ok := b.published[k.commit]; !ok {
			b.published[k.commit] = fmt.Sprintf("%s as %s", b.published[grant.New()], shortid.Hash(grant.New()))
		}
	}
	res := Result{Commit: grant.New(), Target: p.t.Describe(), Branch: targets.BranchName(p.ref),
		Files: len(p.req.Files), Added: p.req.Added, Deleted: p.req.Deleted, Worktree: worktree, Notes: notes}
	if dec.Verdict == approval.Pick {
		res.Picked, res.Files = dec.Paths, len(dec.Paths)
	}
	if p.accepted != nil {
		res.Picked, res.Files, res.Landed, res.LeftOut, res.Dropped = nil, 0, landed, p.accepted.LeftOut, p.dropped
	}
	if len(dec.Comments) == 0 {
		// Approved with comments, then rebased onto a moved branch and
		// decided on that approval: the comments are the approval's.
		dec.Comments = p.comments
	}
	b.sawLocked(p, dec)
	res.Comments = b.commentedLocked(p, dec)
	b.reaskLocked(ctx, p, grant.New())
	// The ledger's head goes into the target before the push answers,
	// outside the lock (on GitHub it is a few requests).
	b.mu.Unlock()
	if err := b.h.RecordLedgerHead(ctx, p.t); err != nil {
		msg := fmt.Sprintf("the push landed, but the ledger's head could not be kept in the target for `airlock ledger verify` to check against: %v", err)
		res.Notes = append(res.Notes, msg)
		b.h.Warn("%s", msg) // the operator's to look into, not the worker's
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// A save that fails leaves the journal at "landing": a restart finds
	// the branch moved and records it pushed. The waiting call's own
	// save reports it to the worker.
	b.finishLocked(p, res, nil, "after a push landed")
}

// retried records that grant's push failed with err and, when the target
// moved under it, rebases p onto the new head and asks again, in this
// same transaction: it reports whether p goes on.
func (b *Book) retried(ctx context.Context, p *push, grant approval.Grant, err error) bool {
	b.mu.Lock()
	err = b.recordFailedLocked(grant, err, err)
	var moved *targets.MovedError
	if !errors.As(err, &moved) || p.retries >= b.cfg.Retries {
		if moved != nil {
			err = fmt.Errorf("%w; it moved %d times while this push waited, so it stopped asking: call git_push again to rebase onto it and ask again", err, p.retries+1)
		}
		b.finishLocked(p, Result{}, err, "after a push ended")
		b.mu.Unlock()
		return false
	}
	// Other servers are pushing to the branch: wait a moment, a little
	// longer each time and not the same for all, so that they do not
	// meet again.
	p.retries++
	b.mu.Unlock()
	time.Sleep(time.Duration(rand.Int64N(int64(min(p.retries, 10)) * int64(5*time.Millisecond))))
	b.mu.Lock()
	defer b.mu.Unlock()
	// The facts of this attempt are those of the last, with the head the
	// target reported as it refused: asking it again would only repeat
	// what askLocked's fetch reads.
	if err := b.askLocked(ctx, p, p.commit, moved.Head); err != nil {
		var there *alreadyThereError
		if errors.As(err, &there) {
			b.finishLocked(p, Result{Already: true, Commit: p.commit.ID, Target: p.t.Describe(), Branch: targets.BranchName(p.ref)}, nil, "after a push ended")
		} else {
			b.finishLocked(p, Result{}, err, "after a push ended")
		}
		return false
	}
	b.h.SaveOrWarnLocked("after a push was asked again")
	return true
}

// finishLocked ends p with res or err and saves that end, once: a request
// that was decided is not offered again after a restart.
func (b *Book) finishLocked(p *push, res Result, err error, what string) {
	b.endLocked(p, res, err)
	b.h.SaveOrWarnLocked(what)
}

// recordFailedLocked records in the ledger that grant's push failed with
// why, and returns err, the worker's error, with the ledger's own failure
// added when it could not (the operator is told too).
func (b *Book) recordFailedLocked(grant approval.Grant, why, err error) error {
	lerr := b.cfg.Gate.RecordPush(grant.Record("failed", why))
	if lerr == nil {
		return err
	}
	b.h.Warn("a push of %s failed (%v), and the ledger could not record it: %v", shortid.Hash(grant.New()), why, lerr)
	return fmt.Errorf("%w (and the ledger could not record that it failed: %v; the operator was told)", err, lerr)
}
