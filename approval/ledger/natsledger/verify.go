package natsledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval/ledger"
)

// readWait bounds reading the whole stream back; stallWait how long a
// reading waits for the next message before it asks again.
const (
	readWait  = 5 * time.Minute
	stallWait = 5 * time.Second
)

// unit is what a Problem's Line counts here.
const unit = "message"

var errStop = errors.New("stop")

// each calls fn with every message of the stream, in order, with its
// stream sequence, up to the last the stream held when it began; fn
// returns errStop to end early.
func (l *Ledger) each(ctx context.Context, fn func(seq uint64, data []byte) error) (jetstream.StreamState, error) {
	// The stream's leader says where it ends; the messages come from a
	// consumer on any replica, which may still be catching up (a node
	// just back): read until that end, not until it has no more.
	info, err := l.stream.Info(ctx, jetstream.WithDeletedDetails(true))
	if err != nil {
		return jetstream.StreamState{}, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
	}
	st := info.State
	if st.Msgs == 0 {
		return st, nil
	}
	// Its last message: before the last sequence when the messages at
	// the end were deleted (which Verify reports).
	end, deleted := st.LastSeq, map[uint64]bool{}
	for _, d := range st.Deleted {
		deleted[d] = true
	}
	for end > st.FirstSeq && deleted[end] {
		end--
	}
	for next := st.FirstSeq; ; {
		done, err := l.readFrom(ctx, next, end, func(seq uint64, data []byte) error {
			next = seq + 1
			return fn(seq, data)
		})
		if err != nil || done {
			return st, err
		}
	}
}

// readFrom reads messages from from on, up to end, with fn: done once it
// reached end or fn said to stop; not done (no error) when its consumer
// stalled, to be read again from where it stopped by another.
func (l *Ledger) readFrom(ctx context.Context, from, end uint64, fn func(seq uint64, data []byte) error) (done bool, err error) {
	cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from})
	if err != nil {
		return false, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
	}
	it, err := cons.Messages()
	if err != nil {
		return false, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
	}
	defer it.Stop()
	for {
		// A consumer on a replica that stopped answering (a node that
		// went, or came back and is not serving yet) is given up for
		// another after a while without a message.
		nctx, cancel := context.WithTimeout(ctx, stallWait)
		m, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		if err != nil && ctx.Err() == nil && nctx.Err() != nil {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
		}
		md, err := m.Metadata()
		if err != nil {
			return false, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
		}
		seq := md.Sequence.Stream
		if err := fn(seq, m.Data()); errors.Is(err, errStop) {
			return true, nil
		} else if err != nil {
			return false, err
		}
		if seq >= end {
			return true, nil
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
