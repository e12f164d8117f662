package natsledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval/ledger"
)

// readWait bounds reading the whole stream back.
const readWait = 5 * time.Minute

// unit is what a Problem's Line counts here.
const unit = "message"

var errStop = errors.New("stop")

// each calls fn with every message of the stream, in order, with its
// stream sequence, up to the last the stream held when it began; fn
// returns errStop to end early.
func (l *Ledger) each(ctx context.Context, fn func(seq uint64, data []byte) error) (jetstream.StreamState, error) {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return jetstream.StreamState{}, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
	}
	st := info.State
	if st.Msgs == 0 {
		return st, nil
	}
	cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return st, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
	}
	it, err := cons.Messages()
	if err != nil {
		return st, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return st, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
		}
		md, err := m.Metadata()
		if err != nil {
			return st, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
		}
		seq := md.Sequence.Stream
		if err := fn(seq, m.Data()); errors.Is(err, errStop) {
			return st, nil
		} else if err != nil {
			return st, err
		}
		// Up to the last message there was when it began (a message
		// deleted at the end leaves the stream's last sequence past
		// every message: none is pending then).
		if seq >= st.LastSeq || md.NumPending == 0 {
			return st, nil
		}
	}
}

// Records reads every record of the chain back, in order, skipping
// messages that hold none (as the file's Records skips torn lines).
func (l *Ledger) Records() ([]ledger.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readWait)
	defer cancel()
	var out []ledger.Record
	_, err := l.each(ctx, func(_ uint64, data []byte) error {
		if rec, ok := decode(data); ok {
			out = append(out, rec)
		}
		return nil
	})
	return out, err
}

// Verify reads the whole stream and checks it as ledger.Verify checks a
// file: every message a record, the stream's sequence without gaps from
// 1 (a message removed or purged leaves one), and the chain (ledger.
// CheckChain: each record's hash, its link to the one before, numbers
// without gaps or reversals), each record at its own number. It reports
// the first problem in Broken, its Line the message's stream sequence.
func (l *Ledger) Verify() (ledger.Report, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readWait)
	defer cancel()
	var (
		rep     ledger.Report
		entries []ledger.Entry
		next    = uint64(1)
	)
	broken := func(at uint64, kind, format string, args ...any) error {
		rep.Broken = &ledger.Problem{Line: int(at), Seq: at, Kind: kind, Detail: fmt.Sprintf(format, args...), Unit: unit}
		return errStop
	}
	st, err := l.each(ctx, func(seq uint64, data []byte) error {
		if seq != next {
			return broken(next, "removed", "%s gone from the stream (deleted or purged, which airlock's stream denies: done to its files, or to a stream made again)", messages(next, seq-1))
		}
		next++
		rec, ok := decode(data)
		if !ok {
			return broken(seq, "malformed", "not a ledger record: published to %s by something other than airlock", l.subject)
		}
		entries = append(entries, ledger.Entry{At: int(seq), Rec: rec})
		return nil
	})
	if err != nil {
		return ledger.Report{}, err
	}
	if rep.Broken == nil && next <= st.LastSeq {
		_ = broken(next, "removed", "%s gone from the stream's end (the stream's last sequence is %d)", messages(next, st.LastSeq), st.LastSeq)
	}
	chain := rep
	ledger.CheckChain(&chain, entries, unit)
	// A record at another number than its own message's, where the
	// stream's sequence and the chain are whole up to it: skipped
	// numbers, which only a cut record may have in a file and no
	// fleet's server writes; something else put it there.
	for i, e := range entries {
		if chain.Broken != nil && e.At >= chain.Broken.Line {
			break
		}
		if e.Rec.Seq != uint64(e.At) {
			rep.Broken = &ledger.Problem{Line: e.At, Seq: e.Rec.Seq, Kind: "misplaced", Unit: unit,
				Detail: fmt.Sprintf("record %d is the stream's message %d: records were put in the stream outside airlock", e.Rec.Seq, e.At)}
			ledger.CheckChain(&rep, entries[:i], unit)
			return rep, nil
		}
	}
	return chain, nil
}

// messages names stream messages from to to.
func messages(from, to uint64) string {
	if to > from {
		return fmt.Sprintf("messages %d to %d are", from, to)
	}
	return fmt.Sprintf("message %d is", from)
}
