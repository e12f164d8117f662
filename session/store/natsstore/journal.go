package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/session/store"
)

// Headers of a journal's messages. A batch's chunks are numbered from 1
// (chunkHeader), its last one marked (endHeader); a message with neither
// is a fence (fenceHeader: the token of the holder that opened the
// journal), which ends whatever batch is unfinished before it.
const (
	chunkHeader = "Airlock-Chunk"
	endHeader   = "Airlock-End"
	fenceHeader = "Airlock-Fence"
)

// gen is the value of a session's gen.ID entry: which subject holds its
// journal, and which holder wrote the entry last.
type gen struct {
	Gen    uint64 `json:"gen"`
	Holder string `json:"holder"`
}

// natsJournal is a session's journal on its generation's subject.
type natsJournal struct {
	l *lease

	mu     sync.Mutex
	gen    uint64
	genRev uint64 // the gen entry's revision this holder wrote
	last   uint64 // the subject's last sequence, as this holder wrote it
	size   int64
	closed bool
}

func (st *Store) readGen(ctx context.Context, id string) (gen, uint64, error) {
	var g gen
	var e jetstream.KeyValueEntry
	err := retry(ctx, func(ctx context.Context) (err error) { e, err = st.sessions.Get(ctx, genKey(id)); return err })
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return g, 0, nil
	}
	if err != nil {
		return g, 0, fmt.Errorf("natsstore: session %s: reading its journal's generation: %w", id, err)
	}
	if err := json.Unmarshal(e.Value(), &g); err != nil {
		return g, 0, fmt.Errorf("natsstore: session %s: its journal's generation: %w", id, err)
	}
	return g, e.Revision(), nil
}

// lastSeq is the stream sequence of subj's last message, 0 when none.
func (st *Store) lastSeq(ctx context.Context, subj string) (uint64, error) {
	var m *jetstream.RawStreamMsg
	err := retry(ctx, func(ctx context.Context) (err error) { m, err = st.stream.GetLastMsgForSubject(ctx, subj); return err })
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("natsstore: reading %s: %w", subj, err)
	}
	return m.Sequence, nil
}

// openJournal claims the journal for this holder (its gen entry written
// at the revision read, a fence published after the subject's last
// message), then replays it up to the fence.
func (l *lease) openJournal(commit func(typ byte) bool, fn func(typ byte, payload []byte) error) (*natsJournal, error) {
	if err := l.held(); err != nil {
		return nil, err
	}
	st := l.st
	ctx, cancel := ctxOp()
	defer cancel()
	g, rev, err := st.readGen(ctx, l.id)
	if err != nil {
		return nil, err
	}
	if g.Gen == 0 {
		g.Gen = 1
	}
	g.Holder = l.token
	data, _ := json.Marshal(g)
	if rev == 0 {
		rev, err = st.sessions.Create(ctx, genKey(l.id), data)
	} else {
		rev, err = st.sessions.Update(ctx, genKey(l.id), data, rev)
	}
	if err != nil {
		return nil, fmt.Errorf("natsstore: session %s: claiming its journal: %w", l.id, err)
	}
	j := &natsJournal{l: l, gen: g.Gen, genRev: rev}
	subj := st.subject(l.id, g.Gen)
	if j.last, err = j.fence(ctx, subj); err != nil {
		return nil, err
	}
	if j.size, err = st.replay(subj, j.last, commit, fn); err != nil {
		return nil, err
	}
	return j, nil
}

// fence publishes a fence after subj's last message: a holder that wrote
// before it and writes again expects a sequence that is no longer the
// last, and is refused.
func (j *natsJournal) fence(ctx context.Context, subj string) (uint64, error) {
	// A holder that does not know yet that it lost the session may
	// write between the read of the last sequence and the fence, as
	// often as it can: try again while there is time.
	for ctx.Err() == nil {
		last, err := j.l.st.lastSeq(ctx, subj)
		if err != nil {
			return 0, err
		}
		m := nats.NewMsg(subj)
		m.Header.Set(fenceHeader, j.l.token)
		ack, err := j.l.st.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(last))
		if err == nil {
			return ack.Sequence, nil
		}
		if !isWrongLast(err) {
			return 0, fmt.Errorf("natsstore: session %s: fencing its journal: %w", j.l.id, err)
		}
		// Another writer's message came between: look again.
	}
	return 0, fmt.Errorf("natsstore: session %s: fencing its journal: %w", j.l.id, ErrFenced)
}

func isWrongLast(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// Write publishes the batch, in chunks of the server's largest message
// at most, each expecting the one before as the subject's last.
func (j *natsJournal) Write(b *journal.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.writable(); err != nil {
		return err
	}
	if err := j.l.st.connected(fmt.Sprintf("session %s: appending to its journal", j.l.id)); err != nil {
		return fmt.Errorf("%w; nothing was sent, so the stored session is as it was before: retry once NATS answers", err)
	}
	ctx, cancel := ctxOp()
	defer cancel()
	for {
		w := j.newChunker(ctx, j.l.st.subject(j.l.id, j.gen), j.last)
		w.buf = make([]byte, 0, min(b.Bytes(), w.max)) // one allocation for a batch of one chunk
		for _, s := range b.Segments() {
			w.write(s)
		}
		w.flush(true)
		if w.err == nil {
			j.last = w.last
			j.size += int64(b.Bytes())
			return nil
		}
		// What of the batch landed (or of an earlier one whose
		// acknowledgement was lost) is taken back: a write that failed
		// leaves the journal as it was, as the local store's does.
		undone, mine, err := j.rollback(ctx)
		if err != nil {
			return errors.Join(w.err, err)
		}
		// Written again while there is time: after a publish no server
		// answered (a cluster's node lost with it: its successor never
		// heard of it), or when what was in the way was this holder's:
		// its own leftover, taken back, or one that the server refused
		// the publish for but did not show yet (a late copy of a publish
		// that timed out, still on its way through a new leader).
		again := errors.Is(w.err, ErrUnreachable) || errors.Is(w.err, ErrFenced) && (undone || mine)
		if !again || ctx.Err() != nil {
			return w.err
		}
	}
}

func (j *natsJournal) writable() error {
	if j.closed {
		return errors.New("natsstore: the journal is closed")
	}
	return j.l.held()
}

// attemptTimeout bounds one publish's wait for its acknowledgement. A
// publish in flight when a cluster's node dies is never answered; Write
// sends its batch again (taking back what may have landed) rather than
// wait out opTimeout.
const attemptTimeout = 2 * time.Second

// chunker publishes a batch's bytes to a subject in numbered chunks.
type chunker struct {
	ctx   context.Context
	j     *natsJournal
	subj  string
	buf   []byte // grown as written, up to max: a small batch allocates little
	max   int    // a chunk's most data
	n     int    // chunks published
	last  uint64 // the subject's last sequence
	bytes int64  // published
	err   error
}

func (j *natsJournal) newChunker(ctx context.Context, subj string, last uint64) *chunker {
	return &chunker{ctx: ctx, j: j, subj: subj, last: last, max: j.l.st.chunk}
}

func (w *chunker) write(p []byte) {
	for len(p) > 0 && w.err == nil {
		k := min(len(p), w.max-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == w.max {
			w.flush(false)
		}
	}
}

// Add makes the chunker a journal.Records: a rewrite streams through it.
func (w *chunker) Add(typ byte, parts ...[]byte) {
	var b journal.Batch
	b.Add(typ, parts...)
	for _, s := range b.Segments() {
		w.write(s)
	}
}

// flush publishes what is buffered as the next chunk (the last when end).
func (w *chunker) flush(end bool) {
	if w.err != nil || (len(w.buf) == 0 && !end) {
		return
	}
	m := nats.NewMsg(w.subj)
	m.Data = w.buf
	m.Header.Set(chunkHeader, strconv.Itoa(w.n+1))
	if end {
		m.Header.Set(endHeader, "1")
	}
	ctx, cancel := context.WithTimeout(w.ctx, attemptTimeout)
	defer cancel()
	ack, err := w.j.l.st.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(w.last))
	if err != nil {
		if isWrongLast(err) {
			err = fmt.Errorf("%w (%v)", ErrFenced, err)
		}
		w.err = w.j.l.st.unreachable(fmt.Sprintf("session %s: appending to its journal", w.j.l.id), err)
		if errors.Is(w.err, ErrUnreachable) {
			w.err = fmt.Errorf("%w; the batch is not in the store (what of it may land later is taken back by the next write), so the stored session is as it was before: retry once NATS answers", w.err)
		}
		return
	}
	w.n++
	w.last = ack.Sequence
	w.bytes += int64(len(m.Data))
	// The publish returned: the connection has its copy of the data.
	w.buf = w.buf[:0]
}

// RewriteWith writes fill's records as one batch to the next
// generation's subject, then moves the gen entry to it at the revision
// this holder wrote (a holder that opened the journal since moved it
// on: the rewrite is refused), then purges the old generation.
func (j *natsJournal) RewriteWith(fill func(journal.Records) error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.writable(); err != nil {
		return err
	}
	st, id := j.l.st, j.l.id
	ctx, cancel := ctxOp()
	defer cancel()
	next := j.gen + 1
	subj := st.subject(id, next)
	drop := func() { _ = st.stream.Purge(ctx, jetstream.WithPurgeSubject(subj)) } // best effort: the next rewrite purges it first
	drop()
	w := j.newChunker(ctx, subj, 0)
	if err := fill(w); err != nil {
		drop()
		return fmt.Errorf("natsstore: session %s: rewriting its journal: %w", id, err)
	}
	w.flush(true)
	if w.err != nil {
		drop()
		return w.err
	}
	rev, err := j.movePointer(ctx, next)
	if err != nil {
		drop()
		return err
	}
	// Best effort: a generation left behind is purged with the session.
	_ = st.stream.Purge(ctx, jetstream.WithPurgeSubject(st.subject(id, j.gen)))
	j.gen, j.genRev, j.last, j.size = next, rev, w.last, w.bytes
	return nil
}

// movePointer writes the gen entry naming generation next at the
// revision this holder wrote; an entry removed (the state vanished and
// the holder made it again: store.Lease.Remake) is created again.
func (j *natsJournal) movePointer(ctx context.Context, next uint64) (uint64, error) {
	st, id := j.l.st, j.l.id
	data, _ := json.Marshal(gen{Gen: next, Holder: j.l.token})
	rev, err := st.sessions.Update(ctx, genKey(id), data, j.genRev)
	if err == nil {
		return rev, nil
	}
	if _, cur, gerr := st.readGen(ctx, id); gerr == nil && cur == 0 {
		rev, err = st.sessions.Create(ctx, genKey(id), data)
		if err == nil {
			return rev, nil
		}
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		err = fmt.Errorf("%w (%v)", ErrFenced, err)
	}
	return 0, fmt.Errorf("natsstore: session %s: moving its journal to its rewrite: %w", id, err)
}

// Sync has nothing to do: a message is on the server's disk (on a
// cluster's majority, with Replicas 3) when its publish is acknowledged.
// A lease lost does not make what was acknowledged less durable, so it
// is not Sync's error (the session would warn of a flush to disk that
// failed): the next write says it.
func (j *natsJournal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return errors.New("natsstore: the journal is closed")
	}
	return nil
}

func (j *natsJournal) Size() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size
}

// Here reports whether the gen entry is still the one this holder wrote,
// from what the Store's watch saw of it (Lease.Here says why that is
// enough): another holder that opened the journal, or a removal of the
// session's state, wrote it since.
func (j *natsJournal) Here() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	e := j.l.st.newest(genKey(j.l.id))
	switch {
	case e.rev <= j.genRev:
		return nil
	case e.gone:
		return fmt.Errorf("%w: session %s's journal is gone", store.ErrStateMoved, j.l.id)
	default:
		return fmt.Errorf("%w: session %s's journal was taken over (%w)", store.ErrStateMoved, j.l.id, ErrFenced)
	}
}

func (j *natsJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	return nil
}
