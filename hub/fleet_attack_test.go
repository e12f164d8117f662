package hub

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/natsstore"
)

// fleetPair is a session held, in a real JetStream, by a live holder
// whose AlivePath answers after slow, and a hub of the same fleet (its
// handler's end signalled on done) that does not hold it.
func fleetPair(t *testing.T, slow time.Duration) (base, id string, other *natsstore.Store, done chan struct{}) {
	t.Helper()
	ns := natstest.Server(t, natstest.Options{})
	holder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(slow)
		alive(w, r)
	}))
	t.Cleanup(holder.Close)
	sa, err := natsstore.New(natstest.Connect(t, ns.ClientURL()), natsstore.Options{LeaseTTL: time.Hour, Owner: holder.URL})
	if err != nil {
		t.Fatal(err)
	}
	l, err := sa.Create(store.Meta{Worker: "w", Transport: "http"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Unlock)
	sb, err := natsstore.New(natstest.Connect(t, ns.ClientURL()), natsstore.Options{LeaseTTL: time.Hour, Owner: "http://b.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	ln := listenLoopback(t)
	h := New(Config{Store: sb, Advertise: "http://b.invalid", Token: "server-token", Base: "http://" + ln.Addr().String() + Path, Log: io.Discard})
	done = make(chan struct{}, 8)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Handler().ServeHTTP(w, r)
		done <- struct{}{}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return h.base, l.SessionID(), sb, done
}

// TestFleetClientGoneBreaksNoLiveLease: a client that hangs up while
// the server asks the session's holder whether it is alive (a flaky
// network, or a client that means it) does not make the server think
// the holder dead: the live holder's lease stays as it was.
func TestFleetClientGoneBreaksNoLiveLease(t *testing.T) {
	base, id, st, done := fleetPair(t, 300*time.Millisecond)
	_, rev, held, err := st.Holder(id)
	if err != nil || !held {
		t.Fatalf("Holder: %v, held %v", err, held)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/"+id, nil)
	req.Header.Set("Authorization", "Bearer server-token")
	req.Header.Set("Mcp-Session-Id", id+".x")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the request was answered (%s) before the client hung up", resp.Status)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never finished the request")
	}
	owner, rev2, held, err := st.Holder(id)
	if err != nil || !held || rev2 != rev {
		t.Fatalf("after a client hung up: the live holder's lease: owner %q, revision %d (was %d), held %v, %v; want it untouched", owner, rev2, rev, held, err)
	}
}
