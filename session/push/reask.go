package push

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/targets"
	"github.com/go-git/go-git/v5/plumbing"
)

// reaskLocked asks again, on the branch's new head, this session's other
// requests that wait on the target and branch landed just moved: the base
// line and the diff a reviewer is shown must be against the branch as it
// is now, not the head it had when they were asked (Since says why, "the
// target moved", with what changed). Each goes through the same path as a
// push the branch moved under (askLocked: rebased onto it when it must
// be, asked as a new request of the same transaction), and its driver
// waits on the new request (reasked).
//
// Only this session's requests: another session's (another server's) are
// in its own Book, whose commits this one cannot rebase; the gate shares
// none of it. That push finds the branch moved when it lands and is asked
// again then (retried), as before.
//
// The new head is the commit that landed: asking the target for it would
// be a call to it under the lock, and the branch moving again meanwhile is
// what a push's landing already finds (MovedError) and asks again for.
func (b *Book) reaskLocked(ctx context.Context, landed *push, head plumbing.Hash) {
	for _, id := range slices.Sorted(maps.Keys(b.pushes)) {
		q := b.pushes[id]
		if q == landed || q.state != requested || q.t.ID() != landed.t.ID() || q.ref != landed.ref {
			continue
		}
		select {
		case <-q.tk.Done():
			continue // decided meanwhile: its driver takes it on
		default:
		}
		if err := b.cfg.Gate.Withdraw(q.req.ID, "the target moved: asked again on its new head"); err != nil {
			if !errors.Is(err, approval.ErrNotPending) {
				b.h.Warn("the request %s, waiting on a branch another push just moved, could not be asked again: %v", q.req.ID, err)
			}
			continue
		}
		err := b.askLocked(ctx, q, q.commit, head)
		var there *alreadyThereError
		switch {
		case errors.As(err, &there):
			b.finishLocked(q, Result{Already: true, Commit: q.commit.ID, Target: q.t.Describe(), Branch: targets.BranchName(q.ref)}, nil, "after a push ended")
		case err != nil:
			b.finishLocked(q, Result{}, err, "after a push ended")
		}
	}
}

// reasked reports whether p's request was replaced since its driver took
// tk (reaskLocked): the driver then waits on the new one.
func (b *Book) reasked(p *push, tk *approval.Ticket) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return p.state == requested && p.tk != tk
}

// repeatDenied reports whether tk was refused at once as a change
// already rejected in this session.
func repeatDenied(tk *approval.Ticket) bool {
	select {
	case <-tk.Done():
	default:
		return false
	}
	dec, _, _ := tk.Wait(context.Background())
	return dec.By == "repeat-denied"
}

// byPerson reports whether dec is a reviewer's own: not the policy's, nor
// the memory of an earlier rejection, nor an approval carried over a
// rebase. Only what a person decided is what they saw.
func byPerson(dec approval.Decision) bool {
	return !strings.HasPrefix(dec.By, "policy:") && dec.By != "repeat-denied" && !strings.HasPrefix(dec.By, "rebased:")
}
