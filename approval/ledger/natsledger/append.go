package natsledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval/ledger"
)

// attempt is a record being published: made after the head at stream
// sequence after, it can only ever be at after+1 (its publish expects
// after).
type attempt struct {
	rec   ledger.Record
	after uint64
}

// Append adds one record of kind with data (marshalled as JSON) at the
// end of the chain and returns it once the stream acknowledged it.
func (l *Ledger) Append(kind string, data any) (ledger.Record, error) {
	return l.append(kind, data, nil)
}

// append is Append; g, when not nil, is asked about the records after
// its mark before each record is made (guard.go).
func (l *Ledger) append(kind string, data any, g *guard) (ledger.Record, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return ledger.Record{}, fmt.Errorf("natsledger: encoding %s: %w", kind, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), appendWait)
	defer cancel()
	// Each call to the server gets a short time of its own: one sent
	// to a node that died meanwhile is never answered, and the next try
	// reaches another.
	step := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, callTimeout) }
	var (
		a         *attempt
		lastErr   error
		conflicts int
		try       int
	)
	for ; try < maxTries && ctx.Err() == nil; try++ {
		if !l.known {
			sctx, cancel := step()
			err := l.readHead(sctx)
			cancel()
			if err != nil {
				lastErr = err
				pause(ctx, try)
				continue
			}
		}
		if a != nil && l.last != a.after {
			// Something landed after a's head: a itself, or another
			// server's record (and a never will: it expects a.after).
			sctx, cancel := step()
			landed, err := l.landed(sctx, a)
			cancel()
			if err != nil {
				lastErr = err
				pause(ctx, try)
				continue
			} else if landed {
				return a.rec, nil
			}
			a = nil
		}
		if a == nil && g != nil {
			// Every record up to the head this one is made after is
			// checked; the publish expects that head, so none lands
			// between the check and the record unseen.
			sctx, cancel := step()
			err := g.upTo(sctx, l, l.last)
			cancel()
			if g.refused != nil {
				return ledger.Record{}, g.refused
			}
			if err != nil {
				lastErr = err
				pause(ctx, try)
				continue
			}
		}
		if a == nil {
			rec, err := ledger.Next(l.head, kind, json.RawMessage(raw), l.now())
			if err != nil {
				return ledger.Record{}, fmt.Errorf("natsledger: %w", err)
			}
			a = &attempt{rec: rec, after: l.last}
		}
		sctx, cancel := step()
		ack, err := l.publish(sctx, a)
		cancel()
		switch {
		case errors.Is(err, nats.ErrMaxPayload):
			// No try makes it smaller.
			return ledger.Record{}, fmt.Errorf("natsledger: a %s record of %d bytes is more than a message of %s may hold (max_payload, %d bytes); nothing acts on it. Raise max_payload in the NATS servers' configuration (up to 64MB; a push's request names every file it changes, about 100 bytes each)",
				kind, len(raw), l.where(), l.nc.MaxPayload())
		case err == nil:
			l.head, l.last = a.rec, ack.Sequence
			return a.rec, nil
		case isWrongLast(err):
			// Another server appended first: its record is the head now.
			conflicts++
			l.known = false
			if conflicts > 3 {
				pause(ctx, conflicts%8)
			}
		default:
			// No answer, or one that says nothing sure: the record may
			// be in the stream. It is published again unchanged (its
			// Nats-Msg-Id dedups it) while the head stays.
			l.known = false
			lastErr = err
			pause(ctx, try)
		}
	}
	why := "another server appended first every time"
	if lastErr != nil {
		why = lastErr.Error()
	}
	return ledger.Record{}, fmt.Errorf("natsledger: a %s record was not appended to %s in %v (%d tries, %d lost to other servers' appends): %s; nothing acts on it. Check that the NATS servers run and JetStream has a leader for the stream (nats stream info %s)",
		kind, l.where(), appendWait, try, conflicts, why, l.name)
}

// publish publishes a's record after a.after: refused (isWrongLast) when
// the stream has moved on.
func (l *Ledger) publish(ctx context.Context, a *attempt) (*jetstream.PubAck, error) {
	body, err := json.Marshal(a.rec)
	if err != nil {
		return nil, fmt.Errorf("natsledger: %w", err)
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(a.rec.Hash), jetstream.WithExpectStream(l.name)}
	if !l.noExpect {
		opts = append(opts, jetstream.WithExpectLastSequence(a.after))
	}
	publish := func() (*jetstream.PubAck, error) {
		return l.js.PublishMsg(ctx, &nats.Msg{Subject: l.subject, Data: body}, opts...)
	}
	var ack *jetstream.PubAck
	if l.lose != nil {
		ack, err = l.lose(publish)
	} else {
		ack, err = publish()
	}
	if err != nil {
		return nil, err
	}
	if ack.Duplicate && ack.Sequence != a.after+1 {
		// The stream knew this record by its Nats-Msg-Id, at a place no
		// record made after a.after can be: it was put there by hand.
		return nil, fmt.Errorf("natsledger: record %d (%s) is already in %s at message %d, not after message %d: see `airlock ledger verify --store`",
			a.rec.Seq, a.rec.Hash, l.where(), ack.Sequence, a.after)
	}
	return ack, nil
}

// landed reports whether a's record is in the stream: at a.after+1, the
// one place it can be (found there when a publish's answer was lost, or
// a publish was sent twice).
func (l *Ledger) landed(ctx context.Context, a *attempt) (bool, error) {
	if l.last == a.after+1 {
		return l.head.Hash == a.rec.Hash, nil
	}
	rec, ok, err := l.recordAt(ctx, a.after+1)
	if err != nil {
		return false, err
	}
	return ok && rec.Hash == a.rec.Hash, nil
}

// isWrongLast: the stream's last sequence is not the one the publish
// expected (10164 from a replicated stream).
func isWrongLast(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// pause waits a little more with each try, jittered so that servers that
// collided do not collide again in step.
func pause(ctx context.Context, try int) {
	d := time.Duration(1+min(try, 20)) * 5 * time.Millisecond
	d = d/2 + rand.N(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
