package broker

import (
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/approval"
)

// CanUndo reports whether a decision of in can be undone from here: its
// server's socket takes an undo as it takes a decision. A fleet's queue
// does not (its decisions bucket holds one decision per request), so a
// reviewer deciding through it is offered no undo, and the push does not
// wait for one.
func (in *Incoming) CanUndo() bool {
	_, ok := in.decider.(*serverConn)
	return ok
}

// Undo undoes this reviewer's approval of in, whose push has not started
// landing: signed with the reviewer's key over the request as received,
// as a decision is, and checked by the server's gate as one
// (approval.Gate.ResolveSigned). The server then asks the request again.
func (in *Incoming) Undo() error {
	if !in.CanUndo() {
		return errors.New("this request's server is reached through a fleet's queue, which takes no undo; the decision stands")
	}
	in.rv.mu.Lock()
	key, by := in.rv.key, in.rv.by
	in.rv.mu.Unlock()
	if key == nil {
		return errors.New("this reviewer has no key to sign with; the decision stands")
	}
	s, err := approval.Sign(key, in.Request, approval.Decision{Verdict: approval.Undo, By: by})
	if err != nil {
		return fmt.Errorf("%w; the decision stands", err)
	}
	_, err = in.decider.Decide(s)
	return err
}
