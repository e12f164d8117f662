package natsstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/store"
)

// TestSessionThroughAnOutage: a session's only NATS server is down for
// longer than the lease's TTL. The calls meanwhile fail, saying NATS did
// not answer and then that the lease was lost (reconnect); the server
// back, the session takes its lease again (no one opened it meanwhile),
// writes its state whole, and its saves go on; resumed elsewhere, it has
// every change, those made during the outage too.
func TestSessionThroughAnOutage(t *testing.T) {
	const ttl = 500 * time.Millisecond
	o := newOutage(t, ttl)
	st := o.st
	w := benchWorker(t)
	l, err := st.Create(store.Meta{Worker: "bench", WorkerKey: "bench"})
	must(t, err)
	sess, err := session.New(context.Background(), w, benchOptions(t, l))
	must(t, err)
	write := func(name string) error {
		if err := sess.Workspace().WriteFile(name, []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return sess.Save()
	}
	must(t, write("before.txt"))

	o.down()
	if err := write("down.txt"); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "retry") {
		t.Fatalf("a call with NATS down: %v, want ErrUnreachable saying to retry", err)
	}
	time.Sleep(2 * ttl)
	if err := write("lost.txt"); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "reconnect") {
		t.Fatalf("a call after the lease was lost: %v, want ErrLeaseLost saying to reconnect", err)
	}

	o.up()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err = write("after.txt"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls with NATS back: %v", err)
		}
	}
	must(t, write("later.txt"))
	id := l.SessionID()
	sess.Close()

	l2, err := st.Open(id)
	must(t, err)
	resumed, _, err := session.Resume(context.Background(), w, benchOptions(t, l2))
	must(t, err)
	defer resumed.Close()
	for _, name := range []string{"before.txt", "down.txt", "lost.txt", "after.txt", "later.txt"} {
		if b, err := resumed.Workspace().ReadFile(name); err != nil || string(b) != name+"\n" {
			t.Errorf("resumed: %s: %q, %v", name, b, err)
		}
	}
}
