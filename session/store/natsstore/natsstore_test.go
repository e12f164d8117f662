package natsstore

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/airlock-dev/airlock/session/recoverytest"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/storetest"
)

// testPayload is the servers' largest message in these tests: small, so
// that the suites' larger batches are chunked.
const testPayload = 64 << 10

// startServer runs a JetStream server in-process on port (-1: any) with
// its files in dir.
func startServer(t testing.TB, dir string, port int) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		MaxPayload: testPayload, NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t testing.TB, s *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

var prefixes atomic.Int64

// storeMaker makes a new store per call: one server, a prefix each.
func storeMaker(t *testing.T, ttl time.Duration) func(t *testing.T) store.Store {
	nc := connect(t, startServer(t, t.TempDir(), -1))
	return func(t *testing.T) store.Store {
		st, err := New(nc, Options{Prefix: fmt.Sprint("t", prefixes.Add(1)), LeaseTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

// TestStoreConformance runs the store suite over JetStream.
func TestStoreConformance(t *testing.T) {
	storetest.Suite(t, storeMaker(t, 0), storetest.Options{CutTail: cutTail, Vanish: vanish})
}

// cutTail cuts n bytes off the end of session id's journal: the last
// message with data is published again shorter (as a batch whose end a
// crash tore), and the ones the cut covers whole are deleted.
func cutTail(t *testing.T, s store.Store, id string, n int) {
	st := s.(*Store)
	ctx := context.Background()
	g, _, err := st.readGen(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	subj := st.subject(id, g.Gen)
	for n > 0 {
		m, err := st.stream.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.stream.DeleteMsg(ctx, m.Sequence); err != nil {
			t.Fatal(err)
		}
		if len(m.Data) == 0 {
			continue // a fence
		}
		if n >= len(m.Data) {
			n -= len(m.Data)
			continue
		}
		nm := nats.NewMsg(subj)
		nm.Header, nm.Data = m.Header, m.Data[:len(m.Data)-n]
		if _, err := st.js.PublishMsg(ctx, nm); err != nil {
			t.Fatal(err)
		}
		n = 0
	}
}

// vanish removes session id's state from under its holder, as an
// operator's purge of it does: its journal, its keys and its lease.
func vanish(t *testing.T, s store.Store, id string) {
	st := s.(*Store)
	if err := st.removeState(id); err != nil {
		t.Fatal(err)
	}
	if err := st.leases.Purge(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// TestServerRestartKeepsAcknowledgedWrites restarts the server
// (the same files) between writes: what was acknowledged is there after
// it, and the holder writes on once its connection is back.
func TestServerRestartKeepsAcknowledgedWrites(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, -1)
	port := s.Addr().(*net.TCPAddr).Port
	nc := connect(t, s)
	st, err := New(nc, Options{Prefix: "r"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.Create(store.Meta{Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	j, err := l.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 20 {
		p := fmt.Sprint("before ", i)
		must(t, j.Write(batch(p)))
		want = append(want, p)
	}
	s.Shutdown()
	s.WaitForShutdown()
	startServer(t, dir, port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := j.Write(batch("after"))
		if err == nil {
			want = append(want, "after")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writing after the restart: %v", err)
		}
	}
	got := readAll(t, st, l.SessionID())
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a restart: %q, want %q", got, want)
	}
}

// TestRecoveryConformance runs the recovery suite over JetStream: a
// session killed after each batch and resumed whole.
func TestRecoveryConformance(t *testing.T) {
	recoverytest.Suite(t, storeMaker(t, 0))
}
