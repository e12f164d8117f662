package hub

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/internal/rpcguard"
	"github.com/airlock-dev/airlock/memfs"
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

// TestFleetHostileSessionIDs: an Mcp-Session-Id no session has (too
// long for a NATS subject, or with characters no id has) is answered
// "not here" without reaching the fleet's NATS as a key: a subject over
// the servers' control line would have the NATS server drop this
// server's connection, every session's with it.
func TestFleetHostileSessionIDs(t *testing.T) {
	ns := natstest.Server(t, natstest.Options{})
	nc := natstest.Connect(t, ns.ClientURL())
	st, err := natsstore.New(nc, natsstore.Options{LeaseTTL: time.Hour, Owner: "http://b.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	ln := listenLoopback(t)
	lim := rpcguard.ForMaxFile(memfs.DefaultLimits().MaxFileBytes)
	h := New(Config{Store: st, Advertise: "http://b.invalid", Token: "server-token", Base: "http://" + ln.Addr().String() + Path, Log: io.Discard,
		Limits: lim, SDKBodyMax: lim.MaxBytes + 64<<10, MaxLive: 4, MaxBytes: 1 << 40})
	srv := &http.Server{Handler: h.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	long := strings.Repeat("a", 8000)
	for _, c := range []struct {
		path, token, mcpID string
		want               int
	}{
		{"/" + long, "wrong", "", http.StatusUnauthorized}, // no token needed to reach the store
		{"/" + long, "server-token", "", http.StatusNotFound},
		{"", "server-token", long + ".x", http.StatusNotFound},
		{"", "server-token", "a*b.x", http.StatusNotFound},
		{"", "server-token", "a>b.x", http.StatusNotFound},
		{"", "server-token", "..x", http.StatusNotFound},
		{"", "server-token", "a b.x", http.StatusNotFound},
	} {
		method := http.MethodGet
		if c.mcpID == "" {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, h.base+c.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.mcpID != "" {
			req.Header.Set("Mcp-Session-Id", c.mcpID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("path %.20q, Mcp-Session-Id %.20q: %s %.200s, want %d", c.path, c.mcpID, resp.Status, body, c.want)
		}
		time.Sleep(50 * time.Millisecond) // a dropped connection shows by now
		if n := nc.Stats().Reconnects; n != 0 || !nc.IsConnected() {
			t.Fatalf("path %.20q, Mcp-Session-Id %.20q: the server's NATS connection was dropped (%d reconnects, connected %v)", c.path, c.mcpID, n, nc.IsConnected())
		}
	}
}

// TestFleetStdioHolderKeepsItsLease: a session a stdio server holds (its
// lease names stdio://HOST/PID?boot=…: no address to forward to, none
// to ask) is not taken for a dead HTTP server's because the server's
// token names it in an Mcp-Session-Id: its live lease stays.
func TestFleetStdioHolderKeepsItsLease(t *testing.T) {
	ns := natstest.Server(t, natstest.Options{})
	sa, err := natsstore.New(natstest.Connect(t, ns.ClientURL()), natsstore.Options{LeaseTTL: time.Hour, Owner: "stdio://host/4242?boot=b"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := sa.Create(store.Meta{Worker: "w", Transport: "stdio"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Unlock)
	id := l.SessionID()
	sb, err := natsstore.New(natstest.Connect(t, ns.ClientURL()), natsstore.Options{LeaseTTL: time.Hour, Owner: "http://b.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	ln := listenLoopback(t)
	h := New(Config{Store: sb, Advertise: "http://b.invalid", Token: "server-token", Base: "http://" + ln.Addr().String() + Path, Log: io.Discard})
	srv := &http.Server{Handler: h.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, rev, _, err := sb.Holder(id)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, h.base, nil)
	req.Header.Set("Authorization", "Bearer server-token")
	req.Header.Set("Mcp-Session-Id", id+".x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("%s %s, want 409", resp.Status, body)
	}
	if owner, rev2, held, err := sb.Holder(id); err != nil || !held || rev2 != rev {
		t.Fatalf("the stdio server's live lease: owner %q, revision %d (was %d), held %v, %v; want it untouched", owner, rev2, rev, held, err)
	}
}

// TestFleetFloodedHolderKeepsItsLease: a holder whose port takes the
// probe's connection and closes it at once (airlock serve's guard does
// so while 512 connections wait: anyone who reaches the port, without a
// token, can hold them) is alive, busy: its lease is not broken, and
// the client is told to try again.
func TestFleetFloodedHolderKeepsItsLease(t *testing.T) {
	ln := listenLoopback(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ns := natstest.Server(t, natstest.Options{})
	sa, err := natsstore.New(natstest.Connect(t, ns.ClientURL()), natsstore.Options{LeaseTTL: time.Hour, Owner: "http://" + ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	l, err := sa.Create(store.Meta{Worker: "w", Transport: "http"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Unlock)
	id := l.SessionID()
	sb, err := natsstore.New(natstest.Connect(t, ns.ClientURL()), natsstore.Options{LeaseTTL: time.Hour, Owner: "http://b.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	bl := listenLoopback(t)
	h := New(Config{Store: sb, Advertise: "http://b.invalid", Token: "server-token", Base: "http://" + bl.Addr().String() + Path, Log: io.Discard})
	srv := &http.Server{Handler: h.Handler()}
	go srv.Serve(bl)
	t.Cleanup(func() { srv.Close() })
	_, rev, _, err := sb.Holder(id)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, h.base, nil)
	req.Header.Set("Authorization", "Bearer server-token")
	req.Header.Set("Mcp-Session-Id", id+".x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "try again") {
		t.Errorf("%s %s, want 503 saying to try again", resp.Status, body)
	}
	if owner, rev2, held, err := sb.Holder(id); err != nil || !held || rev2 != rev {
		t.Fatalf("the busy holder's lease: owner %q, revision %d (was %d), held %v, %v; want it untouched", owner, rev2, rev, held, err)
	}
}

// TestFleetKilledHolderStillTakenOver: the busy rule does not keep a
// dead holder's lease: a holder this server had a kept-alive connection
// to, gone since (its port refuses), has its lease broken at once.
func TestFleetKilledHolderStillTakenOver(t *testing.T) {
	ns := natstest.Server(t, natstest.Options{})
	holder := httptest.NewServer(http.HandlerFunc(alive))
	sa, err := natsstore.New(natstest.Connect(t, ns.ClientURL()), natsstore.Options{LeaseTTL: time.Hour, Owner: holder.URL})
	if err != nil {
		t.Fatal(err)
	}
	l, err := sa.Create(store.Meta{Worker: "w", Transport: "http"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Unlock)
	id := l.SessionID()
	sb, err := natsstore.New(natstest.Connect(t, ns.ClientURL()), natsstore.Options{LeaseTTL: time.Hour, Owner: "http://b.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	bl := listenLoopback(t)
	h := New(Config{Store: sb, Advertise: "http://b.invalid", Token: "server-token", Base: "http://" + bl.Addr().String() + Path, Log: io.Discard})
	srv := &http.Server{Handler: h.Handler()}
	go srv.Serve(bl)
	t.Cleanup(func() { srv.Close() })
	get := func() int {
		req, _ := http.NewRequest(http.MethodGet, h.base, nil)
		req.Header.Set("Authorization", "Bearer server-token")
		req.Header.Set("Mcp-Session-Id", id+".x")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("forwarded to the live holder: %d, want 200", code)
	}
	holder.Close() // its connections and its port
	get()
	if owner, _, held, err := sb.Holder(id); err != nil || held {
		t.Fatalf("the gone holder's lease: owner %q, held %v, %v; want it broken", owner, held, err)
	}
}
