package push

import (
	"context"
	"errors"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/targets"
)

// What hold did with a decided request.
type holdOutcome int

const (
	holdLands      holdOutcome = iota // go on: the decision stands
	holdAskedAgain                    // undone: p waits on a new request
	holdEnded                         // undone, and asking again failed: p ended
)

// hold waits, for a decision its reviewer may undo (an approval, a
// rejection), until its window ends or the reviewer undoes it, then
// starts its landing, or its telling (the gate's Land: no undo after it).
// An undone decision is asked again, as a new request of the same push
// saying why (Since: you undid your decision); nothing of it lands and
// the worker is told nothing. Decisions that cannot be undone (the
// policy's, a pick) go on at once. Outside the Book's lock: the window
// is seconds, and the session goes on meanwhile.
func (b *Book) hold(ctx context.Context, p *push, tk *approval.Ticket) holdOutcome {
	until := tk.UndoUntil()
	if until.IsZero() {
		return holdLands
	}
	timer := time.NewTimer(time.Until(until))
	select {
	case <-timer.C:
	case <-tk.Undone():
	}
	timer.Stop()
	err := b.cfg.Gate.Land(tk)
	if !errors.Is(err, approval.ErrUndone) {
		return holdLands
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// The undone ticket is no approval to carry over (SubmitRebased),
	// and the request is asked over the head it was decided on: a branch
	// that moved since is the landing's to find, as ever.
	p.tk, p.undone = nil, true
	err = b.askLocked(ctx, p, p.commit, p.facts.Head)
	p.undone = false
	var there *alreadyThereError
	switch {
	case errors.As(err, &there):
		b.finishLocked(p, Result{Already: true, Commit: p.commit.ID, Target: p.t.Describe(), Branch: targets.BranchName(p.ref)}, nil, "after a push ended")
		return holdEnded
	case err != nil:
		b.finishLocked(p, Result{}, err, "after an undone decision")
		return holdEnded
	}
	p.notes = append(p.notes, "the reviewer undid their decision in its window, so it was asked again")
	b.h.SaveOrWarnLocked("after an undone decision was asked again")
	return holdAskedAgain
}
