package natsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// decider takes a reviewer's decision of one request through the queue.
type decider struct {
	w      *watcher
	id     string
	server broker.ServerInfo
}

// applyWait bounds the wait for a server that took a decision to say
// what its gate made of it (a pick builds commits first).
const applyWait = 5 * time.Minute

// Decide writes s, the reviewer's signed decision, as the request's one
// decision and waits for the server that has the request to apply it: it
// returns the decision as the gate recorded it, the gate's refusal,
// ErrAlreadyDecided when another reviewer's decision won, or
// broker.ErrQueued when no running server has the request now (the
// decision waits in the queue for the one that offers it again).
func (c *decider) Decide(s approval.SignedDecision) (approval.Decision, error) {
	ctx, cancel := context.WithTimeout(c.w.ctx, c.w.q.o.ClaimWait+applyWait)
	defer cancel()
	mine := decisionEntry{Nonce: nonce(), Signed: s}
	key := outcomeKey(c.id, mine.Nonce)
	// Watched first, so that no outcome written after ours is missed.
	watch, err := c.w.q.outcomes.Watch(ctx, key)
	if err != nil {
		return approval.Decision{}, fmt.Errorf("the fleet's queue cannot be read (%v); nothing was decided, try again", err)
	}
	defer func() { _ = watch.Stop() }()
	if err := c.put(ctx, &mine); err != nil {
		return approval.Decision{}, err
	}
	return c.await(ctx, watch, key, s.Decision)
}

// put creates the decision entry, or takes the place of one a server
// refused (or of one that is not a decision at all); any other decision
// wins.
func (c *decider) put(ctx context.Context, mine *decisionEntry) error {
	kv := c.w.q.decisions
	b, _ := json.Marshal(mine)
	for range 5 {
		_, err := kv.Create(ctx, c.id, b)
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("the decision could not be written to the fleet's queue (%v); nothing was decided, try again", err)
		}
		e, err := kv.Get(ctx, c.id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // gone meanwhile: create it
		}
		if err != nil {
			return fmt.Errorf("the fleet's queue cannot be read (%v); nothing was decided, try again", err)
		}
		prev, perr := parseDecision(c.id, e.Value())
		if perr == nil && !c.refused(ctx, prev.Nonce) {
			return fmt.Errorf("%w by %s (%s); yours was not recorded", ErrAlreadyDecided, termsafe.Line(prev.by()), termsafe.Line(string(prev.Signed.Decision.Verdict)))
		}
		if _, err := kv.Update(ctx, c.id, b, e.Revision()); err == nil {
			return nil
		}
	}
	return errors.New("other decisions of this request keep coming in; nothing was recorded of yours: look at the list again")
}

// refused reports whether a server refused the decision of that nonce.
func (c *decider) refused(ctx context.Context, nonce string) bool {
	e, err := c.w.q.outcomes.Get(ctx, outcomeKey(c.id, nonce))
	if err != nil {
		return false
	}
	out, err := parseOutcome(e.Value())
	return err == nil && out.State == stateRefused
}

// poll is how often a decider reads its outcome besides watching it: a
// watch that a NATS node's failure interrupts takes seconds to resume.
const poll = 250 * time.Millisecond

// await waits for the outcome of the decision d, at key.
func (c *decider) await(ctx context.Context, watch jetstream.KeyWatcher, key string, d approval.Decision) (approval.Decision, error) {
	claim := time.NewTimer(c.w.q.o.ClaimWait)
	defer claim.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	claimed := false
	for {
		var e jetstream.KeyValueEntry
		select {
		case u, ok := <-watch.Updates():
			if !ok {
				return approval.Decision{}, errors.New("the fleet's queue went away before the server confirmed the decision: look at the list again to see whether it was recorded")
			}
			e = u
		case <-tick.C:
			if got, err := c.w.q.outcomes.Get(ctx, key); err == nil {
				e = got
			}
		case <-claim.C:
			if !claimed {
				return d, fmt.Errorf("%w: no running server has request %s now (it was offered by server %s on %s, pid %d); your decision is kept in the fleet's queue, and the server that offers it again (the session resumed) applies it then",
					broker.ErrQueued, c.id, termsafe.Line(c.server.Name), termsafe.Line(c.server.Host), c.server.PID)
			}
		case <-ctx.Done():
			return approval.Decision{}, errors.New("the server did not confirm the decision in time (or the reviewer stopped): look at the list again to see whether it was recorded")
		}
		if e == nil {
			continue
		}
		got, state, err := outcome(e)
		switch {
		case err != nil || state == stateApplied || state == stateRefused:
			return got, err
		case state == stateApplying:
			claimed = true
		}
	}
}

// outcome reads outcome entry e: its state, and for an applied one the
// decision as recorded; an error for a refused one (the gate's).
func outcome(e jetstream.KeyValueEntry) (approval.Decision, string, error) {
	if e.Operation() != jetstream.KeyValuePut {
		return approval.Decision{}, "", errors.New("the decision's outcome was removed from the fleet's queue; look at the list again")
	}
	got, err := parseOutcome(e.Value())
	if err != nil {
		return approval.Decision{}, "", fmt.Errorf("the fleet's queue holds no outcome of the decision but %s; look at the ledger", termsafe.Line(err.Error()))
	}
	switch got.State {
	case stateApplied:
		if got.Result == nil {
			return approval.Decision{}, "", fmt.Errorf("server %s applied the decision but did not say how; look at the ledger", termsafe.Line(got.Server))
		}
		return *got.Result, got.State, nil
	case stateRefused:
		return approval.Decision{}, got.State, errors.New(termsafe.Line(got.Error))
	}
	return approval.Decision{}, got.State, nil
}
