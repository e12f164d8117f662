package hub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/session/store"
)

// AlivePath answers 200 while the server runs: another server of the
// fleet asks it before forwarding a session's requests here (and a load
// balancer may use it as its health check). It needs no token and tells
// nothing.
const AlivePath = "/alive"

// ForwardedHeader marks a request one server of a fleet forwarded to
// another (its value: the forwarder's address). A forwarded request is
// never forwarded again: two servers that each think the other holds a
// session answer instead of bouncing it between them.
const ForwardedHeader = "Airlock-Forwarded-By"

// Holders is what a fleet's store (natsstore.Store) tells about who
// holds a session's lease, and how a dead holder's lease is ended.
type Holders interface {
	// Holder reports the address the holder of session id's lease gave,
	// and the lease's revision; held is false when no one holds it.
	Holder(id string) (owner string, rev uint64, held bool, err error)
	// Break ends session id's lease if it is still at revision rev.
	Break(id string, rev uint64) error
}

// fleet is what a hub of a fleet knows of the other servers.
type fleet struct {
	st    Holders
	self  string        // this server's address, as its leases record it
	probe time.Duration // how long an owner may take to answer AlivePath
	tr    *http.Transport
}

func newFleet(st Holders, self string) *fleet {
	d := &net.Dialer{Timeout: time.Second}
	return &fleet{st: st, self: self, probe: time.Second, tr: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute}}
}

// elsewhere: another server of the fleet holds the session a request is
// for.
type elsewhere struct {
	id, owner string
	rev       uint64
}

func (e *elsewhere) Error() string {
	return fmt.Sprintf("airlock: session %s is open in the airlock serve at %s", e.id, e.owner)
}

// heldElsewhere is an *elsewhere when another server holds session id,
// nil when no one does or this server's name is on its lease.
func (f *fleet) heldElsewhere(id string) error {
	owner, rev, held, err := f.st.Holder(id)
	switch {
	case errors.Is(err, store.ErrNoSession):
		return nil // an id no session has: not here either, says the caller
	case err != nil:
		return fail(http.StatusServiceUnavailable, "finding who holds session %s: %v; try again", id, err)
	case !held || owner == f.self:
		return nil
	}
	return &elsewhere{id: id, owner: owner, rev: rev}
}

// openSaved takes session id's lease. A lease in this server's own name
// that this server does not hold (openSaved runs with the session marked
// as opening) is a killed run's of this server, at the same address: it
// is broken at once rather than waited out.
func (h *Hub) openSaved(id string) (store.Lease, error) {
	l, err := h.store.Open(id)
	if h.fleet == nil || !errors.Is(err, store.ErrSessionBusy) {
		return l, err
	}
	owner, rev, held, herr := h.fleet.st.Holder(id)
	if herr != nil || !held || owner != h.fleet.self {
		return l, err
	}
	if err := h.fleet.st.Break(id, rev); err != nil {
		return nil, err
	}
	fmt.Fprintf(h.stderr, "airlock serve: session %s: took over the lease a killed run of this server (%s) left\n", id, termsafe.Line(owner))
	return h.store.Open(id)
}

// relay answers a request for a session another server holds: forwarded
// to that server while it answers; when it does not, its lease is broken
// and relay returns false (the caller takes the session up here). A
// redirect would not do: browsers' and the MCP SDKs' fetch drop the
// Authorization header when a redirect leaves the origin.
func (h *Hub) relay(w http.ResponseWriter, r *http.Request, e *elsewhere) bool {
	f := h.fleet
	if by := r.Header.Get(ForwardedHeader); by != "" {
		http.Error(w, fmt.Sprintf("airlock: session %s is open in the airlock serve at %s, and this request was forwarded here by %s: "+
			"a request is forwarded once; try again", e.id, termsafe.Line(e.owner), termsafe.Line(by)), http.StatusServiceUnavailable)
		return true
	}
	// A holder with no HTTP address (a stdio server names itself
	// stdio://HOST/PID) has nothing to forward to and nothing to ask: a
	// failed probe of it would break a live lease.
	if !strings.HasPrefix(e.owner, "http://") && !strings.HasPrefix(e.owner, "https://") {
		http.Error(w, fmt.Sprintf("airlock: session %s is open in an airlock serve that gave no HTTP address (%q: not one of this fleet's HTTP servers): "+
			"stop that server, or wait for it to let the session go", e.id, termsafe.Line(e.owner)), http.StatusConflict)
		return true
	}
	// Not the request's context: a client that hangs up mid-probe (a
	// flaky network, or one that means it) would make a live holder look
	// dead, and its lease be broken.
	why := f.alive(context.WithoutCancel(r.Context()), e.owner)
	if why == nil {
		f.forward(w, r, e, h.base)
		return true
	}
	if busy := (*busyError)(nil); errors.As(why, &busy) {
		http.Error(w, fmt.Sprintf("airlock: session %s is open in the airlock serve at %s, which is too busy to answer (%s): try again",
			e.id, termsafe.Line(e.owner), termsafe.Line(busy.err.Error())), http.StatusServiceUnavailable)
		return true
	}
	if err := f.st.Break(e.id, e.rev); err != nil {
		http.Error(w, fmt.Sprintf("airlock: session %s: its holder %s does not answer (%s), and its lease could not be taken over: %s; try again",
			e.id, termsafe.Line(e.owner), termsafe.Line(why.Error()), termsafe.Line(err.Error())), http.StatusServiceUnavailable)
		return true
	}
	fmt.Fprintf(h.stderr, "airlock serve: session %s: its holder %s does not answer (%s); took its lease over\n",
		e.id, termsafe.Line(e.owner), termsafe.Line(why.Error()))
	return false
}

// busyError: the holder took the probe's connection and closed it
// without an answer. A server that is gone refuses connections (or, hung
// or cut off, times out); one that closes them runs: airlock serve's
// guard does so while 512 connections wait, and anyone who reaches its
// port may hold those. Its lease is not broken (it would lapse anyway,
// were the holder not renewing it).
type busyError struct{ err error }

func (e *busyError) Error() string { return e.err.Error() }

// alive asks the server at owner whether it runs: nil when it answers
// AlivePath within f.probe; a *busyError when it took the connection
// and closed it.
func (f *fleet) alive(ctx context.Context, owner string) error {
	ctx, cancel := context.WithTimeout(ctx, f.probe)
	defer cancel()
	var connected atomic.Bool
	// A new connection only: a kept-alive one a holder killed meanwhile
	// fails too, and the transport tries a new one.
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			connected.Store(true)
		}
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(owner, "/")+AlivePath, nil)
	if err != nil {
		return err
	}
	resp, err := f.tr.RoundTrip(req)
	if err != nil {
		if connected.Load() && ctx.Err() == nil {
			return &busyError{err}
		}
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", AlivePath, resp.Status)
	}
	return nil
}

// forward proxies r to the server at e.owner as it is (its bearer token
// too), streaming the answer (an MCP event stream flows as it comes).
func (f *fleet) forward(w http.ResponseWriter, r *http.Request, e *elsewhere, base string) {
	to, err := url.Parse(e.owner)
	if err != nil {
		http.Error(w, fmt.Sprintf("airlock: session %s's holder gave the address %q, which is not a URL: %v", e.id, termsafe.Line(e.owner), err), http.StatusBadGateway)
		return
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(to)
			pr.Out.Header.Set(ForwardedHeader, f.self)
		},
		Transport:     f.tr,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			// The client keeps coming here, where it came.
			if resp.Header.Get("Airlock-Session-Url") != "" {
				resp.Header.Set("Airlock-Session-Url", base+"/"+e.id)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, fmt.Sprintf("airlock: forwarding to session %s's holder %s failed: %v; try again (a holder that is gone is taken over then)",
				e.id, termsafe.Line(e.owner), err), http.StatusBadGateway)
		},
	}
	p.ServeHTTP(w, r)
}

// alive answers AlivePath.
func alive(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "airlock: GET "+AlivePath, http.StatusMethodNotAllowed)
		return
	}
	fmt.Fprintln(w, "airlock")
}
