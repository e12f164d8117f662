package approval

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// Ticket is a submitted request, decided or not.
type Ticket struct {
	req   *Request
	picks chan<- *PickAsk // where a reviewer's pick goes; nil: no picking
	done  chan struct{}
	busy  bool // a decision is being made (a pick's commit is being built)

	dec   Decision
	grant Grant
	err   error
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

// PickAsk is a reviewer's choice of some of a request's files. The gate sends
// it on the channel the request was submitted with, to the push that
// asked, which makes the commit of just those files and answers with
// Made: the gate calls no code of the push's, and decides nothing until
// the answer comes.
type PickAsk struct {
	Request string // the request's id
	Paths   []string

	done chan struct{}
	id   plumbing.Hash
	err  error
}

// Made answers the pick with the commit of the picked files, or why it
// cannot be made (the reviewer is told, and nothing is decided).
func (p *PickAsk) Made(id plumbing.Hash, err error) {
	p.id, p.err = id, err
	close(p.done)
}

// pick hands paths to the push that submitted t and waits for its commit.
func (t *Ticket) pick(paths []string) (plumbing.Hash, error) {
	p := &PickAsk{Request: t.req.ID, Paths: paths, done: make(chan struct{})}
	t.picks <- p
	<-p.done
	return p.id, p.err
}
