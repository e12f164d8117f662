package natsqueue_test

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/broker/natsqueue"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// fleet is one NATS server with JetStream, the queue's home.
type fleet struct {
	t   testing.TB
	url string
}

func newFleet(t testing.TB) *fleet {
	s := natstest.Server(t, natstest.Options{})
	return &fleet{t: t, url: s.ClientURL()}
}

// conn is a connection of its own: servers and reviewers never share one.
func (f *fleet) conn() *nats.Conn { return natstest.Connect(f.t, f.url) }

// server is one airlock server's approval side: a gate on a real ledger,
// published to the queue.
type server struct {
	gate   *approval.Gate
	ledger *ledger.Ledger
	pub    *natsqueue.Publisher
	warn   *syncBuffer
}

func (f *fleet) server(worker string) *server {
	f.t.Helper()
	l := approvaltest.NewLedger(f.t)
	return f.serverOn(l, worker)
}

func (f *fleet) serverOn(l *ledger.Ledger, worker string) *server {
	f.t.Helper()
	g := approval.NewGate(l, approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys})
	warn := &syncBuffer{}
	p, err := natsqueue.Publish(g, f.conn(), natsqueue.Options{Warn: warn},
		broker.ServerInfo{PID: os.Getpid(), Worker: worker, Started: time.Now()})
	if err != nil {
		f.t.Fatal(err)
	}
	s := &server{gate: g, ledger: l, pub: p, warn: warn}
	f.t.Cleanup(func() { _ = p.Close() })
	return s
}

// reviewer watches the queue on a connection of its own.
func (f *fleet) reviewer(by string) (*broker.Reviewer, *syncBuffer) {
	f.t.Helper()
	warn := &syncBuffer{}
	r, err := natsqueue.Watch(context.Background(), f.conn(), natsqueue.Options{By: by, Warn: warn, ClaimWait: time.Second})
	if err != nil {
		f.t.Fatal(err)
	}
	r.SetKey(approvaltest.ReviewerKey())
	f.t.Cleanup(r.Close)
	return r, warn
}

func requestFor(worker string) *approval.Request {
	r := approvaltest.SampleRequest()
	r.Worker = worker
	r.New = approvaltest.Hash(worker)
	// A tree of its own: a gate rejects again at once a tree once rejected.
	r.Tree = approvaltest.Hash(worker + " tree")
	return r
}

// eventually waits for cond, failing after a generous bound.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// incoming is the reviewer's open request id, or nil.
func incoming(r *broker.Reviewer, id string) *broker.Incoming {
	for _, in := range r.Pending() {
		if in.Request.ID == id {
			return in
		}
	}
	return nil
}

func waitFor(t *testing.T, r *broker.Reviewer, id string) *broker.Incoming {
	t.Helper()
	var in *broker.Incoming
	eventually(t, "request "+id+" reaches the reviewer", func() bool { in = incoming(r, id); return in != nil })
	return in
}

// ask submits req at s's gate and waits until reviewer r has it.
func (s *server) ask(t *testing.T, r *broker.Reviewer, req *approval.Request) (*approval.Ticket, *broker.Incoming) {
	t.Helper()
	tk, err := s.gate.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tk, waitFor(t, r, tk.Request().ID)
}

func wait(t *testing.T, tk *approval.Ticket) (approval.Decision, approval.Grant, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return tk.Wait(ctx)
}

// decisions are the decision records of a ledger.
func decisions(t *testing.T, l *ledger.Ledger) []ledger.Record {
	t.Helper()
	recs, err := l.Records()
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Record
	for _, r := range recs {
		if r.Kind == ledger.KindDecision {
			out = append(out, r)
		}
	}
	return out
}

// bucket is the queue's KV bucket of that name, written directly (as
// anyone with the NATS credentials could).
func bucket(t *testing.T, f *fleet, name string) jetstream.KeyValue {
	t.Helper()
	js, err := jetstream.New(f.conn())
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// bodiesStore is the queue's object store, read directly.
func bodiesStore(t *testing.T, f *fleet) jetstream.ObjectStore {
	t.Helper()
	js, err := jetstream.New(f.conn())
	if err != nil {
		t.Fatal(err)
	}
	o, err := js.ObjectStore(context.Background(), "airlock_reviews_bodies")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// syncBuffer is a bytes.Buffer for several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
