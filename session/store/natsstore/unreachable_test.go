package natsstore

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/airlock-dev/airlock/session/store"
)

// TestUnreachableForLongerThanTheTTL: the only NATS server stops for
// longer than the lease's TTL. Writes fail at once with ErrUnreachable
// (saying the stored session is unchanged and to retry); the lease is
// lost and writes say to reconnect; with the server back, the holder
// takes its lease again (no one opened the session meanwhile) and
// writes on, and what was acknowledged before is all there.
func TestUnreachableForLongerThanTheTTL(t *testing.T) {
	const ttl = 500 * time.Millisecond
	o := newOutage(t, ttl)
	st := o.st
	l, err := st.Create(store.Meta{Worker: "w"})
	must(t, err)
	defer l.Unlock()
	j, err := l.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	must(t, err)
	must(t, j.Write(batch("before")))

	o.down()
	start := time.Now()
	err = j.Write(batch("while down"))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "stored session is as it was") || !strings.Contains(err.Error(), "retry") {
		t.Fatalf("a write with NATS down: %v, want ErrUnreachable saying the state is unchanged and to retry", err)
	}
	if took := time.Since(start); took > 2*reconnectWait {
		t.Fatalf("the write took %v to fail", took)
	}
	time.Sleep(ttl + ttl/2)
	if err := l.Here(); !errors.Is(err, store.ErrStateMoved) || !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Here after NATS was down longer than the TTL: %v, want a lost lease", err)
	}
	if err := j.Write(batch("lost")); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "reconnect") {
		t.Fatalf("a write after the lease was lost: %v, want ErrLeaseLost saying to reconnect", err)
	}

	o.up()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = l.Remake(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("taking the lease again with NATS back: %v", err)
		}
	}
	must(t, l.Here())
	must(t, j.Write(batch("after")))
	if got := readAll(t, st, l.SessionID()); strings.Join(got, ",") != "before,after" {
		t.Fatalf("journal %q, want [before after]", got)
	}
}

// TestTakenOverWhileUnreachable: while holder A could not reach NATS for
// longer than the TTL, B opened the session and wrote. A, back, may not
// take the lease again and write its stale copy over B's: it is refused
// for good, with a message that says to reconnect, and B's writes stand.
func TestTakenOverWhileUnreachable(t *testing.T) {
	const ttl = 300 * time.Millisecond
	st := storeMaker(t, ttl)(t).(*Store)
	la, err := st.Create(store.Meta{Worker: "w"})
	must(t, err)
	defer la.Unlock()
	ja, err := la.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	must(t, err)
	must(t, ja.Write(batch("a")))
	id := la.SessionID()
	la.(*lease).stopRenewing() // A cut off from NATS: its renewals stop
	var lb store.Lease
	for deadline := time.Now().Add(10 * ttl); ; time.Sleep(ttl / 10) {
		if lb, err = st.Open(id); err == nil {
			break
		}
		if !errors.Is(err, store.ErrSessionBusy) || time.Now().After(deadline) {
			t.Fatalf("B taking the session after A's lease expired: %v", err)
		}
	}
	jb, err := lb.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	must(t, err)
	must(t, jb.Write(batch("b")))
	must(t, jb.Close())
	lb.Unlock()

	if err := la.Here(); !errors.Is(err, store.ErrStateMoved) {
		t.Fatalf("A's Here: %v, want ErrStateMoved", err)
	}
	for range 2 { // refused again, not taken on a second try
		if err := la.Remake(); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "reconnect") {
			t.Fatalf("A taking back a session B wrote meanwhile: %v, want ErrFenced saying to reconnect", err)
		}
	}
	if err := ja.Write(batch("a-stale")); err == nil {
		t.Fatal("A's stale write went through")
	}
	if got := readAll(t, st, id); strings.Join(got, ",") != "a,b" {
		t.Fatalf("journal %q, want [a b]", got)
	}
	lc, err := st.Open(id) // A let its lease go: the session is free
	must(t, err)
	lc.Unlock()
}

// outage is a Store on the one NATS server that a test stops (down)
// and starts again on its files and port (up).
type outage struct {
	t    *testing.T
	dir  string
	port int
	s    *server.Server
	st   *Store
}

func newOutage(t *testing.T, ttl time.Duration) *outage {
	o := &outage{t: t, dir: t.TempDir()}
	o.s = startServer(t, o.dir, -1)
	o.port = o.s.Addr().(*net.TCPAddr).Port
	var err error
	o.st, err = New(connect(t, o.s), Options{Prefix: "o", LeaseTTL: ttl})
	must(t, err)
	return o
}

// down stops the server and waits until the client sees it gone: a
// write sent before waits for its answer for up to opTimeout, one sent
// after fails at once.
func (o *outage) down() {
	o.s.Shutdown()
	o.s.WaitForShutdown()
	for o.st.nc.IsConnected() {
		time.Sleep(time.Millisecond)
	}
}

func (o *outage) up() { o.s = startServer(o.t, o.dir, o.port) }
