package natsledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/natsconn"
)

// Options say where in JetStream the ledger is.
type Options struct {
	// Prefix names the stream and the subject (letters, digits, - and
	// _): "airlock" when empty.
	Prefix string
	// Replicas is how many servers of a cluster keep each record, when
	// New makes the stream: 1 when zero (a fleet runs 3).
	Replicas int
}

// Ledger is a fleet's ledger in a JetStream stream.
type Ledger struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	name    string // the stream's
	subject string
	path    string
	now     func() time.Time

	mu sync.Mutex
	// head is the chain's last record as this Ledger last saw it, and
	// last the stream's last sequence then (known false: read them
	// again). A stale head costs one refused publish, never a fork: the
	// publish expects last.
	head  ledger.Record
	last  uint64
	known bool
	// noExpect drops the expected-last-sequence check, for the test
	// that shows what it prevents.
	noExpect bool
	// lose, when set by a test, replaces a publish's answer: a
	// publish whose ack was lost, or that never reached the stream.
	lose func(publish func() (*jetstream.PubAck, error)) (*jetstream.PubAck, error)
}

var _ approval.Ledger = (*Ledger)(nil)

// opTimeout bounds one call to the server; appendWait one Append, tries
// and all.
const (
	opTimeout  = 10 * time.Second
	appendWait = 30 * time.Second
	// callTimeout bounds one call within an Append.
	callTimeout = 3 * time.Second
	maxTries    = 1000
	// scanBack bounds how many messages that are not records a head is
	// looked for behind.
	scanBack = 1000
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ErrNoLedger: the fleet has no ledger stream under the prefix (Open).
var ErrNoLedger = errors.New("no ledger stream")

// New finds the ledger's stream under o.Prefix on the server nc is
// connected to (which must have JetStream enabled), or makes it: with
// o.Replicas, delete and purge denied. A stream found is used as it is:
// a server started with other flags neither changes its replicas nor
// anything else.
func New(nc *nats.Conn, o Options) (*Ledger, error) {
	l, err := newLedger(nc, o)
	if err != nil {
		return nil, err
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	ctx, cancel := ctxOp()
	defer cancel()
	cfg := jetstream.StreamConfig{
		Name: l.name, Subjects: []string{l.subject},
		Description: "airlock's ledger: every push request, decision, withdrawal and push, hash-chained",
		Storage:     jetstream.FileStorage, Replicas: o.Replicas,
		DenyDelete: true, DenyPurge: true,
		// Long enough for a publish retried after a lost answer to be
		// known again by its Nats-Msg-Id.
		Duplicates: 2 * appendWait,
	}
	for try := 0; ctx.Err() == nil; try++ {
		if l.stream, err = l.js.Stream(ctx, l.name); err == nil {
			break
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			// Another server may make it at the same moment: then it
			// is found at the next turn.
			if l.stream, err = l.js.CreateStream(ctx, cfg); err == nil {
				break
			}
		}
		// A cluster starting (no leader, not all peers known yet) or a
		// node being replaced: servers start beside their NATS.
		pause(ctx, try)
	}
	if err == nil {
		err = l.denyRemoval(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("natsledger: the ledger stream %s (is JetStream enabled on %s, with room for %d replicas?): %w",
			l.name, natsconn.ConnectedURL(nc), o.Replicas, err)
	}
	return l, nil
}

// denyRemoval denies deleting and purging on a stream found without
// (made by hand): once set, no update lifts them.
func (l *Ledger) denyRemoval(ctx context.Context) error {
	cfg := l.stream.CachedInfo().Config
	if cfg.DenyDelete && cfg.DenyPurge {
		return nil
	}
	cfg.DenyDelete, cfg.DenyPurge, cfg.AllowRollup = true, true, false
	var err error
	l.stream, err = l.js.UpdateStream(ctx, cfg)
	return err
}

// Open finds the ledger's stream under o.Prefix without making it, for
// those who only read it (ErrNoLedger when there is none).
func Open(nc *nats.Conn, o Options) (*Ledger, error) {
	l, err := newLedger(nc, o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	l.stream, err = l.js.Stream(ctx, l.name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("natsledger: %w %s at %s: no airlock server of this fleet has written its ledger there yet; check --store and --nats-prefix (the servers' own)",
			ErrNoLedger, l.name, natsconn.ConnectedURL(nc))
	}
	if err != nil {
		return nil, fmt.Errorf("natsledger: the ledger stream %s at %s: %w", l.name, natsconn.ConnectedURL(nc), err)
	}
	return l, nil
}

func newLedger(nc *nats.Conn, o Options) (*Ledger, error) {
	if o.Prefix == "" {
		o.Prefix = "airlock"
	}
	if !namePattern.MatchString(o.Prefix) {
		return nil, fmt.Errorf("natsledger: prefix %q: use only letters, digits, - and _", o.Prefix)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("natsledger: %w", err)
	}
	l := &Ledger{nc: nc, js: js, name: o.Prefix + "_ledger", subject: o.Prefix + ".ledger", now: time.Now}
	l.path = l.servers() + " stream " + l.name
	return l, nil
}

func ctxOp() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// Path names the ledger for people: "nats://SERVERS stream NAME", the
// NATS servers as given (without credentials) and the stream. The
// targets that keep the ledger's head key it by the stream alone
// (targets.LedgerAt), so that all the fleet's servers keep one head.
func (l *Ledger) Path() string { return l.path }

// Stream is the name of the ledger's stream.
func (l *Ledger) Stream() string { return l.name }

// servers are the NATS servers nc was given, without credentials.
func (l *Ledger) servers() string {
	out := natsconn.PublicURLs(l.nc.Opts.Servers)
	if len(out) == 0 {
		out = append(out, natsconn.ConnectedURL(l.nc))
	}
	if !strings.Contains(out[0], "://") {
		out[0] = "nats://" + out[0]
	}
	return strings.Join(out, ",")
}

// Head returns the chain's last record (zero when it has none), as the
// stream holds it now.
func (l *Ledger) Head() (ledger.Record, error) {
	ctx, cancel := ctxOp()
	defer cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readHead(ctx); err != nil {
		return ledger.Record{}, err
	}
	return l.head, nil
}

// readHead reads the stream's last sequence and the last record at or
// before it into l.head, l.last.
func (l *Ledger) readHead(ctx context.Context) error {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
	}
	st := info.State
	head := ledger.Record{}
	for seq, n := st.LastSeq, 0; seq >= st.FirstSeq && seq > 0 && st.Msgs > 0; seq, n = seq-1, n+1 {
		if n == scanBack {
			return fmt.Errorf("natsledger: the last %d messages of %s are not ledger records: something other than airlock publishes to %s; stop it (allow only airlock's servers to publish there), and see `airlock ledger verify --store`",
				scanBack, l.where(), l.subject)
		}
		rec, ok, err := l.recordAt(ctx, seq)
		if err != nil {
			return err
		}
		if ok {
			head = rec
			break
		}
	}
	l.head, l.last, l.known = head, st.LastSeq, true
	return nil
}

// recordAt reads the record in message seq; ok is false when there is
// no such message or it holds no record.
func (l *Ledger) recordAt(ctx context.Context, seq uint64) (ledger.Record, bool, error) {
	m, err := l.stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return ledger.Record{}, false, nil
	}
	if err != nil {
		return ledger.Record{}, false, fmt.Errorf("natsledger: reading message %d of %s: %w", seq, l.where(), err)
	}
	rec, ok := decode(m.Data)
	return rec, ok, nil
}

// decode reads a message's record, as Records reads a file's line.
func decode(data []byte) (ledger.Record, bool) {
	var r ledger.Record
	if json.Unmarshal(data, &r) != nil || r.Hash == "" {
		return ledger.Record{}, false
	}
	return r, true
}

// First returns the chain's first record (zero when it has none).
func (l *Ledger) First() (ledger.Record, error) {
	ctx, cancel := ctxOp()
	defer cancel()
	info, err := l.stream.Info(ctx)
	if err != nil {
		return ledger.Record{}, fmt.Errorf("natsledger: reading %s: %w", l.where(), err)
	}
	if info.State.Msgs == 0 {
		return ledger.Record{}, nil
	}
	rec, _, err := l.recordAt(ctx, info.State.FirstSeq)
	return rec, err
}

func (l *Ledger) where() string {
	return fmt.Sprintf("the ledger stream %s at %s", l.name, natsconn.ConnectedURL(l.nc))
}

// Record returns record number seq from its own message, where every
// server puts it (ok false when that message holds no record seq: none
// is there, or something else put messages in the stream; Records reads
// it whole).
func (l *Ledger) Record(seq uint64) (ledger.Record, bool, error) {
	ctx, cancel := ctxOp()
	defer cancel()
	rec, ok, err := l.recordAt(ctx, seq)
	if err != nil || !ok || rec.Seq != seq {
		return ledger.Record{}, false, err
	}
	return rec, true, nil
}
