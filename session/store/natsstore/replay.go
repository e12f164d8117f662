package natsstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/session/journal"
)

// record is a replayed record not yet followed by a commit record.
type record struct {
	typ     byte
	payload []byte
}

// replayer rebuilds batches from a subject's messages and hands on the
// records up to each commit record.
type replayer struct {
	commit  func(typ byte) bool
	fn      func(typ byte, payload []byte) error
	buf     []byte // the batch being put together
	next    int    // the chunk it wants next; 0: none until a first
	pending []record
	size    int64
	seq     uint64 // the stream sequence of the last message taken
	failed  bool   // a record was refused (fn's error): not to be read again
}

// replay calls fn for subj's records up to the last commit record at or
// before sequence stop, and returns the bytes its batches take. A read
// that no server answered (a cluster electing the stream's leader) is
// taken up again after the last message taken, within opTimeout of the
// last progress.
func (st *Store) replay(subj string, stop uint64, commit func(typ byte) bool, fn func(typ byte, payload []byte) error) (int64, error) {
	if stop == 0 {
		return 0, nil
	}
	r := &replayer{commit: commit, fn: fn}
	progress := time.Now()
	for {
		ctx, cancel := ctxOp()
		from := r.seq
		err := st.replayFrom(ctx, subj, stop, r)
		cancel()
		if err == nil {
			return r.size, nil
		}
		if r.seq != from {
			progress = time.Now()
		}
		if r.failed || !isUnreachable(err) || time.Since(progress) > opTimeout {
			return 0, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// replayFrom reads subj's messages after r.seq up to stop into r.
func (st *Store) replayFrom(ctx context.Context, subj string, stop uint64, r *replayer) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if r.seq > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, r.seq+1
	}
	cons, err := st.js.OrderedConsumer(ctx, st.stream.CachedInfo().Config.Name, cfg)
	if err != nil {
		return fmt.Errorf("natsstore: reading %s: %w", subj, err)
	}
	for {
		batch, err := cons.Fetch(1024, jetstream.FetchMaxWait(opTimeout), jetstream.FetchMaxBytes(max(8<<20, 2*st.chunk)))
		if err != nil {
			return fmt.Errorf("natsstore: reading %s: %w", subj, err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("natsstore: reading %s: %w", subj, err)
			}
			if md.Sequence.Stream > stop {
				return nil
			}
			if err := r.take(m.Headers(), m.Data()); err != nil {
				r.failed = true
				return err
			}
			r.seq = md.Sequence.Stream
			if r.seq == stop {
				return nil
			}
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("natsstore: reading %s: %w", subj, err)
		}
		if got == 0 {
			return fmt.Errorf("natsstore: reading %s: it ends before sequence %d, its last when the read began", subj, stop)
		}
	}
}

// take adds one message: a fence or a chunk out of order drops the
// unfinished batch, a batch's last chunk decodes it.
func (r *replayer) take(h map[string][]string, data []byte) error {
	hv := func(k string) string {
		if v := h[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	i, err := strconv.Atoi(hv(chunkHeader))
	if err != nil {
		// A fence: what came before it and was not committed was cut
		// off by the holder that opened the journal then.
		r.buf, r.next, r.pending = nil, 0, nil
		return nil
	}
	r.size += int64(len(data))
	if i == 1 {
		r.buf, r.next = nil, 1
	}
	if i != r.next {
		r.buf, r.next = nil, 0
		return nil
	}
	r.buf = append(r.buf, data...)
	r.next++
	if hv(endHeader) == "" {
		return nil
	}
	buf := r.buf
	r.buf, r.next = nil, 0
	_, err = journal.Decode(buf, func(typ byte, payload []byte) error {
		r.pending = append(r.pending, record{typ, payload})
		if !r.commit(typ) {
			return nil
		}
		for _, p := range r.pending {
			if err := r.fn(p.typ, p.payload); err != nil {
				return err
			}
		}
		r.pending = r.pending[:0]
		return nil
	})
	return err
}
