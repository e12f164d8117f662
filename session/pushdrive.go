package session

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/targets"
)

// drive takes p from its decision to its end. It runs whether or not a
// call is waiting: an approved push lands even if the worker's call
// answered "still waiting" long ago. Each attempt calls the target at
// most three times: its facts were read when the request was made, then
// Push, then (once it landed) the ledger's head; a push that failed with
// an error that does not say whether it landed reads the head once more.
func (s *Session) drive(p *push) {
	ctx := context.Background()
	for {
		// A reviewer's pick comes to this goroutine, which makes the
		// commit of the picked files, while the request waits.
		select {
		case ask := <-p.picks:
			s.pick(p, ask)
			continue
		case <-p.tk.Done():
		}
		dec, grant, ok := s.approved(p)
		if !ok {
			return
		}
		err := p.t.Push(ctx, grant, s.store)
		if out := targets.Landed(ctx, p.t, p.ref, grant.New(), err); out.Landed {
			s.landed(ctx, p, dec, grant, err, out.Worktree)
			return
		}
		if !s.retried(ctx, p, grant, err) {
			return
		}
	}
}

// approved takes p from its decision to landing: the ledger records
// "landing" and a durable session saves it before the target is touched.
// ok false: p ended (refused, withdrawn, or it could not be recorded).
func (s *Session) approved(p *push) (dec approval.Decision, grant approval.Grant, ok bool) {
	closed, cancel := context.WithCancel(context.Background())
	cancel()
	dec, grant, err := p.tk.Wait(closed)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.finishLocked(p, PushResult{}, err, "after a push ended")
		return dec, grant, false
	}
	p.state = decided
	if _, carried := s.published[grant.New()]; !carried && !p.r.stagedOrPublished(grant.New()) {
		// Pinning should make this impossible; never push a commit
		// the sandbox no longer stands behind.
		err := fmt.Errorf("%s changed while it was under review, so nothing was pushed; git_push again", shortid.Hash(grant.New()))
		s.finishLocked(p, PushResult{}, s.recordFailedLocked(grant, errors.New("the commit changed while under review"), err), "after a push ended")
		return dec, grant, false
	}
	p.state = landing
	if err := s.gate.RecordPush(grant.Record("landing", nil)); err != nil {
		s.finishLocked(p, PushResult{}, fmt.Errorf("recording the push failed, so nothing was pushed: %w", err), "after a push ended")
		return dec, grant, false
	}
	// A durable session knows the push is landing before the target is
	// touched: after a crash, the branch says how it ended. One that
	// cannot say so does not touch it: a push that landed unknown to the
	// journal would be asked for again after a crash.
	if err := s.saveLocked(); err != nil {
		err = fmt.Errorf("the session could not be saved before pushing, so nothing was pushed: %w; free space in the server's state directory (or make it writable), then call git_push again", err)
		s.finishLocked(p, PushResult{}, s.recordFailedLocked(grant, err, err), "after a push ended")
		return dec, grant, false
	}
	return dec, grant, true
}

// landed ends p, whose push of grant landed (err: what the target said
// after it landed, worktree: the working tree it left behind).
func (s *Session) landed(ctx context.Context, p *push, dec approval.Decision, grant approval.Grant, err, worktree error) {
	s.mu.Lock()
	var notes []string
	if lerr := s.gate.RecordPush(grant.Record("pushed", err)); lerr != nil {
		// The branch holds it whatever the ledger says: the worker is
		// told it landed, the operator that the ledger lacks it.
		s.warn("the push of %s to %s landed, but the ledger could not record it: %v", shortid.Hash(grant.New()), p.t.Describe(), lerr)
		notes = append(notes, fmt.Sprintf("the push landed, but the ledger could not record it (%v); the operator was told", lerr))
	}
	s.advanceLocked(p.r, grant.New(), p.spec, p.ref, p.t)
	for _, k := range p.keys {
		// The commits this push was asked for before a rebase or a pick
		// made them grant.New(): pushed too, under that id.
		if _, ok := s.published[k.commit]; !ok {
			s.published[k.commit] = fmt.Sprintf("%s as %s", s.published[grant.New()], shortid.Hash(grant.New()))
		}
	}
	res := PushResult{Commit: grant.New(), Target: p.t.Describe(), Branch: targets.BranchName(p.ref),
		Files: len(p.req.Files), Added: p.req.Added, Deleted: p.req.Deleted, Worktree: worktree, Notes: notes}
	if dec.Verdict == approval.Pick {
		res.Picked, res.Files = dec.Paths, len(dec.Paths)
	}
	// The ledger's head goes into the target before the push answers,
	// outside the lock (on GitHub it is a few requests).
	s.mu.Unlock()
	if err := s.recordLedgerHead(ctx, p.t); err != nil {
		msg := fmt.Sprintf("the push landed, but the ledger's head could not be kept in the target for `airlock ledger verify` to check against: %v", err)
		res.Notes = append(res.Notes, msg)
		s.warn("%s", msg) // the operator's to look into, not the worker's
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A save that fails leaves the journal at "landing": a restart finds
	// the branch moved and records it pushed. The waiting call's own
	// save reports it to the worker.
	s.finishLocked(p, res, nil, "after a push landed")
}

// retried records that grant's push failed with err and, when the target
// moved under it, rebases p onto the new head and asks again, in this
// same transaction: it reports whether p goes on.
func (s *Session) retried(ctx context.Context, p *push, grant approval.Grant, err error) bool {
	s.mu.Lock()
	err = s.recordFailedLocked(grant, err, err)
	var moved *targets.MovedError
	if !errors.As(err, &moved) || p.retries >= s.retries() {
		if moved != nil {
			err = fmt.Errorf("%w; it moved %d times while this push waited, so it stopped asking: call git_push again to rebase onto it and ask again", err, p.retries+1)
		}
		s.finishLocked(p, PushResult{}, err, "after a push ended")
		s.mu.Unlock()
		return false
	}
	// Other servers are pushing to the branch: wait a moment, a little
	// longer each time and not the same for all, so that they do not
	// meet again.
	p.retries++
	s.mu.Unlock()
	time.Sleep(time.Duration(rand.Int64N(int64(min(p.retries, 10)) * int64(5*time.Millisecond))))
	s.mu.Lock()
	defer s.mu.Unlock()
	// The facts of this attempt are those of the last, with the head the
	// target reported as it refused: asking it again would only repeat
	// what askLocked's fetch reads.
	if err := s.askLocked(ctx, p, p.commit, moved.Head); err != nil {
		var there *alreadyThereError
		if errors.As(err, &there) {
			s.finishLocked(p, PushResult{Already: true, Commit: p.commit.ID, Target: p.t.Describe(), Branch: targets.BranchName(p.ref)}, nil, "after a push ended")
		} else {
			s.finishLocked(p, PushResult{}, err, "after a push ended")
		}
		return false
	}
	s.saveOrWarnLocked("after a push was asked again")
	return true
}

func (s *Session) retries() int {
	if s.opts.Retries > 0 {
		return s.opts.Retries
	}
	return defaultRetries
}

// finishLocked ends p with res or err and saves that end, once: a request
// that was decided is not offered again after a restart.
func (s *Session) finishLocked(p *push, res PushResult, err error, what string) {
	s.endLocked(p, res, err)
	s.saveOrWarnLocked(what)
}

// recordFailedLocked records in the ledger that grant's push failed with
// why, and returns err, the worker's error, with the ledger's own failure
// added when it could not (the operator is told too).
func (s *Session) recordFailedLocked(grant approval.Grant, why, err error) error {
	lerr := s.gate.RecordPush(grant.Record("failed", why))
	if lerr == nil {
		return err
	}
	s.warn("a push of %s failed (%v), and the ledger could not record it: %v", shortid.Hash(grant.New()), why, lerr)
	return fmt.Errorf("%w (and the ledger could not record that it failed: %v; the operator was told)", err, lerr)
}
