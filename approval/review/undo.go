package review

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// undoable reports whether the reviewer is offered to undo d, a decision
// of in about to be sent: an approval of the whole push or a rejection, at a terminal
// that can stop waiting for the key (c), through a server that takes an
// undo (its socket; a fleet's queue does not). The decision says so,
// signed: only then does its push wait the server's window.
func undoable(in *broker.Incoming, c canceler, d approval.Decision) bool {
	return c != nil && (d.Verdict == approval.Approve || d.Verdict == approval.Reject) && in.Request.Kind != approval.KindNetwork && in.CanUndo()
}

// offerUndo says when decision d takes effect (an approved push starts
// landing, a rejection is told), and undoes it if the reviewer presses u
// before: "Landing in 5 s: u to undo". Any
// other key goes on at once (the push still lands when the window ends):
// the reviewer is held no longer than they choose.
func offerUndo(ctx context.Context, t Terminal, c canceler, in *broker.Incoming, d approval.Decision) {
	left := time.Until(d.UndoUntil)
	if d.UndoUntil.IsZero() || c == nil || left <= 0 {
		return
	}
	what := "Landing"
	if d.Verdict == approval.Reject {
		what = "The worker is told"
	}
	fmt.Fprintf(t, "  %s in %d s: u to undo, any other key to go on.\n", what, int(math.Ceil(left.Seconds())))
	pressed := make(chan bool, 1)
	go func() {
		k, err := t.ReadKey()
		pressed <- err == nil && (k == 'u' || k == 'U')
	}()
	timer := time.NewTimer(left)
	defer timer.Stop()
	var undo, keyed bool
	select {
	case undo = <-pressed:
		keyed = true
	case <-timer.C:
	case <-ctx.Done():
	}
	if !keyed {
		c.Cancel()
		// Pressed as the time ran out: the server says whether it was
		// in time.
		undo = <-pressed && ctx.Err() == nil
		c.Reset()
	}
	switch {
	case !undo && keyed:
		fmt.Fprintln(t, "  Not undone; it takes effect when its window ends.")
		return
	case !undo:
		fmt.Fprintln(t, "  It can no longer be undone.")
		return
	}
	if err := in.Undo(); err != nil {
		fmt.Fprintf(t, "  Not undone: %s\n", termsafe.Line(err.Error()))
		return
	}
	fmt.Fprintln(t, "  Undone: nothing lands and the worker is told nothing; the push is asked again.")
}
