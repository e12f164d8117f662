package natsledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/approval/ledger/ledgertest"
	"github.com/airlock-dev/airlock/approval/ledger/natsledger"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// natsStore is a ledger stream under its own prefix on a real server.
type natsStore struct {
	url      string
	prefix   string
	replicas int
}

func (s natsStore) open(t testing.TB) *natsledger.Ledger {
	t.Helper()
	l, err := natsledger.New(natstest.Connect(t, s.url), natsledger.Options{Prefix: s.prefix, Replicas: s.replicas})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (s natsStore) Open(t testing.TB) approval.Ledger { return s.open(t) }

func (s natsStore) Verify(t testing.TB) ledger.Report {
	t.Helper()
	rep, err := s.open(t).Verify()
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

var prefixes atomic.Int64

func newStore(t testing.TB, srv *server.Server) natsStore {
	return natsStore{url: srv.ClientURL(), prefix: fmt.Sprintf("t%d", prefixes.Add(1))}
}

// The NATS ledger keeps what approval.Ledger promises, as the file
// ledger does (package ledger runs the same suite).
func TestConformance(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	ledgertest.Run(t, func(t *testing.T) ledgertest.Store { return newStore(t, srv) })
}

func appendN(t testing.TB, l approval.Ledger, n int) []ledger.Record {
	t.Helper()
	var out []ledger.Record
	for i := range n {
		rec, err := l.Append(ledger.KindRequest, map[string]any{"n": i})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

// Without the expected-last-sequence check two servers fork the chain
// at once: each chains after the head it last saw. This is what the
// check is for; the concurrent tests hold it.
func TestWithoutTheExpectedSequenceItForks(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	s := newStore(t, srv)
	a, b := s.open(t), s.open(t)
	natsledger.DropExpectedSequence(a)
	natsledger.DropExpectedSequence(b)
	appendN(t, a, 1)
	appendN(t, b, 1)
	appendN(t, a, 1) // a's head is still its own record 1
	rep := s.Verify(t)
	if rep.Broken == nil || rep.Broken.Kind != "reordered" || rep.Broken.Line != 3 {
		t.Fatalf("two servers without the check: broken %v, want record 2 again at message 3", rep.Broken)
	}
	// With it, the same turns make one chain.
	s = newStore(t, srv)
	a, b = s.open(t), s.open(t)
	appendN(t, a, 1)
	appendN(t, b, 1)
	appendN(t, a, 1)
	if rep := s.Verify(t); !rep.OK() || rep.Records != 3 {
		t.Fatalf("with the check: %d records, broken %v", rep.Records, rep.Broken)
	}
}

// Path names the servers and the stream, never a secret of the URL.
func TestPathHasNoSecrets(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	u := strings.Replace(srv.ClientURL(), "nats://", "nats://someone:s3cret@", 1)
	nc := natstest.Connect(t, u)
	l, err := natsledger.New(nc, natsledger.Options{Prefix: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	if p := l.Path(); strings.Contains(p, "s3cret") || strings.Contains(p, "someone") || p != srv.ClientURL()+" stream fleet_ledger" {
		t.Fatalf("path %q", p)
	}
}

// A stream made by hand without the denials gets them from the first
// server that finds it; a reader finds no stream where none was made,
// and says what to check.
func TestStreamFoundOrMissing(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	s := newStore(t, srv)
	js, err := jetstream.New(natstest.Connect(t, s.url))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: s.prefix + "_ledger", Subjects: []string{s.prefix + ".ledger"}}); err != nil {
		t.Fatal(err)
	}
	appendN(t, s.open(t), 1)
	st, err := js.Stream(ctx, s.prefix+"_ledger")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; !cfg.DenyDelete || !cfg.DenyPurge {
		t.Fatalf("the stream found still allows deleting (%v) or purging (%v)", !cfg.DenyDelete, !cfg.DenyPurge)
	}
	_, err = natsledger.Open(natstest.Connect(t, s.url), natsledger.Options{Prefix: "nobody"})
	if !errors.Is(err, natsledger.ErrNoLedger) || !strings.Contains(err.Error(), "check --store and --nats-prefix") {
		t.Fatalf("opening a ledger no server made: %v", err)
	}
	if _, err := js.Stream(ctx, "nobody_ledger"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("a reader made the stream: %v", err)
	}
}

// Record finds a record at its own message; past messages put in by
// something else it says it is not there (the gate then reads the
// stream whole, and finds it).
func TestRecordByNumber(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	s := newStore(t, srv)
	l := s.open(t)
	recs := appendN(t, l, 3)
	js, _ := rawStream(t, s)
	if _, err := js.Publish(context.Background(), s.prefix+".ledger", []byte("not a record")); err != nil {
		t.Fatal(err)
	}
	recs = append(recs, appendN(t, l, 1)...) // record 4, at message 5
	g := approval.NewGate(l, approval.Policy{Mode: approval.ModeAsk})
	for i, want := range recs {
		got, ok, err := l.Record(want.Seq)
		if i < 3 && (err != nil || !ok || got.Hash != want.Hash) || i == 3 && (ok || err != nil) {
			t.Errorf("record %d: %+v, %v, %v; want %s", want.Seq, got, ok, err, want.Hash)
		}
		if got, ok, err := g.LedgerRecord(want.Seq); err != nil || !ok || got.Hash != want.Hash {
			t.Errorf("the gate's record %d: %+v, %v, %v; want %s", want.Seq, got, ok, err, want.Hash)
		}
	}
	if _, ok, err := g.LedgerRecord(9); ok || err != nil {
		t.Errorf("record 9 of 4: found %v, %v", ok, err)
	}
}
