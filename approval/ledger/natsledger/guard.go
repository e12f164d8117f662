package natsledger

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/approval/ledger"
)

// guard is AppendUnless's check: the records after its mark, each asked
// once, as the head moves on under other servers' appends.
type guard struct {
	checked uint64 // the last message asked about
	check   func(ledger.Record) error
	refused error
}

// upTo asks check about the messages after g.checked up to last.
func (g *guard) upTo(ctx context.Context, l *Ledger, last uint64) error {
	for seq := g.checked + 1; seq <= last; seq++ {
		rec, ok, err := l.recordAt(ctx, seq)
		if err != nil {
			return err
		}
		if ok {
			if err := g.check(rec); err != nil {
				g.refused = err
				return err
			}
		}
		g.checked = seq
	}
	return nil
}

// AppendUnless appends one record of kind with data, as Append, unless
// check refuses one of the records after number after (each is asked
// once, oldest first): its error is returned as it is, and nothing is
// appended. The record is published expecting the head the check read up
// to, so another server's record cannot land between them unchecked: it
// is how one decision per request holds in a fleet.
func (l *Ledger) AppendUnless(kind string, data any, after uint64, check func(ledger.Record) error) (ledger.Record, error) {
	return l.append(kind, data, &guard{checked: after, check: check})
}

// RecordsSince reads the records after number after, oldest first
// (what a reader that has seen up to after has not).
func (l *Ledger) RecordsSince(after uint64) ([]ledger.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readWait)
	defer cancel()
	info, err := l.stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
	}
	end := info.State.LastSeq
	var out []ledger.Record
	for next := after + 1; next <= end; {
		done, err := l.readFrom(ctx, next, end, func(seq uint64, data []byte) error {
			next = seq + 1
			if rec, ok := decode(data); ok && rec.Seq > after {
				out = append(out, rec)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	return out, nil
}
