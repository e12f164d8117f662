package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Ticket is a submitted request, decided or not.
type Ticket struct {
	req   *Request
	picks chan<- *PickAsk // where a reviewer's pick goes; nil: no picking
	done  chan struct{}
	busy  bool // a decision is being made (a pick's commit is being built)
	// final: decided before it was offered, by a decision the ledger
	// held (Resubmit after a restart). after: the ledger record a second
	// decision of it is looked for after.
	final bool
	after uint64

	dec   Decision
	grant Grant
	err   error
	// An approval its reviewer may undo (undo.go): undone is closed when
	// they do; wasUndone and landing are guarded by the gate's lock.
	undone    chan struct{}
	wasUndone bool
	landing   bool
}

// Request returns the request.
func (t *Ticket) Request() *Request { return t.req }

// Wait waits for a decision until ctx ends. An approval comes with its
// Grant; a rejection as an error wrapping ErrRejected with the reviewer's
// reason. When ctx ends first, it returns ErrPending and the request stays
// open: waiting again (or submitting the same push again) picks it up.
func (t *Ticket) Wait(ctx context.Context) (Decision, Grant, error) {
	// A decided ticket reports its decision even to a context that has
	// ended: select alone would pick between the two at random.
	select {
	case <-t.done:
		return t.dec, t.grant, t.err
	default:
	}
	select {
	case <-t.done:
		return t.dec, t.grant, t.err
	case <-ctx.Done():
		return Decision{}, Grant{}, fmt.Errorf("%w: request %s", ErrPending, t.req.ID)
	}
}

// Final reports whether the ticket came back decided from the ledger
// (Resubmit of a request decided before a restart): nobody was asked.
func (t *Ticket) Final() bool { return t.final }

// Done is closed once the ticket is decided or withdrawn.
func (t *Ticket) Done() <-chan struct{} { return t.done }

// EventKind says what happened to a request.
type EventKind string

const (
	EventAdded     EventKind = "added"
	EventResolved  EventKind = "resolved"
	EventWithdrawn EventKind = "withdrawn"
)

// Event tells a reviewer channel (the broker) about requests.
type Event struct {
	Kind    EventKind
	Request *Request
}

// PickAsk is a reviewer's choice of some of a request's files, or of some
// hunks of its commits. The gate sends it on the channel the request was
// submitted with, to the push that asked, which makes the commits of just
// those and answers with MadeCommits (or Made): the gate calls no code of
// the push's, and decides nothing until the answer comes.
type PickAsk struct {
	Request string // the request's id
	Paths   []string
	// Accept, when not empty, is what of each commit was accepted, hunk by
	// hunk, checked against the request (instead of Paths): the push
	// makes a commit of each commit's accepted part, with its message.
	Accept []Accepted
	// At is the time the commits are dated with, the decision's (to the
	// second): the same pick at the same time makes the same commits.
	At time.Time

	done chan struct{}
	ids  []plumbing.Hash
	err  error
}

// Made answers the pick with the commit of the picked files, or why it
// cannot be made (the reviewer is told, and nothing is decided).
func (p *PickAsk) Made(id plumbing.Hash, err error) {
	var ids []plumbing.Hash
	if err == nil {
		ids = []plumbing.Hash{id}
	}
	p.MadeCommits(ids, err)
}

// MadeCommits answers the pick with the commits made, oldest first (the
// last is what the push carries), or why they cannot be made.
func (p *PickAsk) MadeCommits(ids []plumbing.Hash, err error) {
	if err == nil && len(ids) == 0 {
		err = errors.New("no commit was made of the pick")
	}
	p.ids, p.err = ids, err
	close(p.done)
}

// pick hands the choice to the push that submitted t and waits for its
// commits.
func (t *Ticket) pick(paths []string, accept []Accepted, at time.Time) ([]plumbing.Hash, error) {
	p := &PickAsk{Request: t.req.ID, Paths: paths, Accept: accept, At: at, done: make(chan struct{})}
	t.picks <- p
	<-p.done
	return p.ids, p.err
}
