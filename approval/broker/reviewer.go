package broker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/approval"
)

// The reviewer's side: it watches the socket directory, connects to every
// server there, and holds what they offer until decided or gone.

// Incoming is a request a server offers to this reviewer.
type Incoming struct {
	Request *approval.Request
	Server  ServerInfo

	rv      *Reviewer
	server  string  // the key of the server that offers it (see Offer)
	decider Decider // takes a decision to that server
	gone    chan struct{}
	why     string
}

// Decider takes a reviewer's decision to the server that offered a
// request, and returns the decision as that server's gate recorded it:
// the Unix socket of a server, or a fleet's queue.
type Decider interface {
	Decide(d approval.SignedDecision) (approval.Decision, error)
}

// ErrQueued says a decision was kept for later, not yet recorded: in a
// fleet's queue, for a request whose server is not running now; the
// server that offers the request again applies it.
var ErrQueued = errors.New("the decision is queued until a server offers the request again")

// Gone is closed when the request is no longer open: another reviewer
// decided it, it was withdrawn, or its server went away.
func (in *Incoming) Gone() <-chan struct{} { return in.gone }

// Why says why the request is gone.
func (in *Incoming) Why() string {
	in.rv.mu.Lock()
	defer in.rv.mu.Unlock()
	return in.why
}

// Decide sends d to the request's server and returns the decision as the
// server recorded it (for Pick, with the commit made of the picked files).
// The decision is signed first with the reviewer's key (SetKey), over
// the request as this reviewer received it, in the reviewer's name.
func (in *Incoming) Decide(d approval.Decision) (approval.Decision, error) {
	in.rv.mu.Lock()
	key, by := in.rv.key, in.rv.by
	in.rv.mu.Unlock()
	if key == nil {
		return approval.Decision{}, errors.New("this reviewer has no key to sign decisions with; nothing was decided")
	}
	d.By = by
	s, err := approval.Sign(key, in.Request, d)
	if err != nil {
		return approval.Decision{}, fmt.Errorf("%w; nothing was decided", err)
	}
	return in.decider.Decide(s)
}

// Reviewer is a reviewer's connection to every running server.
type Reviewer struct {
	dir    string
	cancel context.CancelFunc

	mu      sync.Mutex
	servers map[string]*serverConn // by socket path
	// others are the servers another source told of (AddServer), by key.
	others map[string]ServerInfo
	// open holds the open requests by server and id: each server mints
	// its own ids (and a resumed session offers its old ones again), so
	// two servers may offer the same id.
	open    map[openKey]*Incoming
	changed chan struct{}
	wg      sync.WaitGroup
	// key signs this reviewer's decisions, in the name by.
	key approval.Signer
	by  string
}

// SetKey gives the reviewer the key it signs its decisions with: the
// servers accept only decisions signed by a key they trust.
func (r *Reviewer) SetKey(k approval.Signer) {
	r.mu.Lock()
	r.key = k
	r.mu.Unlock()
}

// SetName names the reviewer in the decisions it signs (Watch names it
// by its user, as the socket's peer credentials do).
func (r *Reviewer) SetName(by string) {
	r.mu.Lock()
	r.by = by
	r.mu.Unlock()
}

// Watch connects to every server in dir (see SocketDir), and to servers
// that start later, until ctx ends or Close.
func Watch(ctx context.Context, dir string) (*Reviewer, error) {
	if err := privateDir(dir); err != nil {
		return nil, fmt.Errorf("reviewer: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := NewReviewer(cancel)
	r.dir = dir
	// As the server names a socket's peer (checkPeer): the name this
	// reviewer signs must be the one the kernel gives.
	r.by = fmt.Sprintf("%s (pid %d)", userName(os.Getuid()), os.Getpid())
	r.scan()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				r.mu.Lock()
				for _, s := range r.servers {
					s.c.Close()
				}
				r.mu.Unlock()
				return
			case <-t.C:
				r.scan()
			}
		}
	}()
	return r, nil
}

// NewReviewer returns a Reviewer no server offers to yet: a source other
// than the socket directory (a fleet's queue) offers requests to it and
// takes them back with Offer and Take. Close calls stop (if not nil).
func NewReviewer(stop func()) *Reviewer {
	if stop == nil {
		stop = func() {}
	}
	return &Reviewer{cancel: stop, servers: map[string]*serverConn{}, others: map[string]ServerInfo{},
		open: map[openKey]*Incoming{}, changed: make(chan struct{}, 1)}
}

// Close disconnects from every server. Requests stay pending there.
func (r *Reviewer) Close() {
	r.cancel()
	r.wg.Wait()
}

// Offer adds a request that the server known by the key server (a name
// no socket path can be, such as "nats:NAME") offers, with d to take its
// decision, and returns it; a request already open under that server and
// id is returned as it is.
func (r *Reviewer) Offer(server string, info ServerInfo, req *approval.Request, d Decider) *Incoming {
	r.mu.Lock()
	k := openKey{server, req.ID}
	in := r.open[k]
	if in == nil {
		in = &Incoming{Request: req, Server: info, rv: r, server: server, decider: d, gone: make(chan struct{})}
		r.open[k] = in
	}
	r.mu.Unlock()
	r.signal()
	return in
}

// Take takes back the request id that server offered: it is gone, for
// why ("it was withdrawn").
func (r *Reviewer) Take(server, id, why string) {
	r.mu.Lock()
	r.goneLocked(server, id, why)
	r.mu.Unlock()
	r.signal()
}

// AddServer and RemoveServer tell the reviewer of a server another source
// knows of (Servers lists it), by the key its requests are offered under.
func (r *Reviewer) AddServer(server string, info ServerInfo) {
	r.mu.Lock()
	r.others[server] = info
	r.mu.Unlock()
	r.signal()
}

// RemoveServer: see AddServer. The server's open requests stay open.
func (r *Reviewer) RemoveServer(server string) {
	r.mu.Lock()
	delete(r.others, server)
	r.mu.Unlock()
	r.signal()
}

// Servers returns the servers connected to.
func (r *Reviewer) Servers() []ServerInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ServerInfo
	for _, s := range r.servers {
		if s.info.PID != 0 {
			out = append(out, s.info)
		}
	}
	for _, info := range r.others {
		out = append(out, info)
	}
	return out
}

func (r *Reviewer) scan() {
	paths, _ := filepath.Glob(filepath.Join(r.dir, "server-*.sock"))
	for _, p := range paths {
		r.mu.Lock()
		_, known := r.servers[p]
		r.mu.Unlock()
		if known {
			continue
		}
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			continue // a stale socket of a server that died
		}
		s := &serverConn{rv: r, path: p, c: c, acks: map[string]chan message{}}
		r.mu.Lock()
		r.servers[p] = s
		r.mu.Unlock()
		r.wg.Add(1)
		go s.read()
	}
}

func (r *Reviewer) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Pending returns the open requests, oldest first (requests of the same
// time in the order of their servers' sockets, then of their ids).
func (r *Reviewer) Pending() []*Incoming {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Incoming, 0, len(r.open))
	for _, in := range r.open {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return older(out[i], out[j]) })
	return out
}

func older(a, b *Incoming) bool {
	if c := a.Request.Time.Compare(b.Request.Time); c != 0 {
		return c < 0
	}
	if a.server != b.server {
		return a.server < b.server
	}
	return a.Request.ID < b.Request.ID
}

// Changed receives (at most one value at a time) when something about the
// servers or their requests may have changed: compare Pending with what
// was shown. Next takes from it too; use one or the other at a time.
func (r *Reviewer) Changed() <-chan struct{} { return r.changed }

// Next waits for an open request and returns the oldest.
func (r *Reviewer) Next(ctx context.Context) (*Incoming, error) {
	for {
		if p := r.Pending(); len(p) > 0 {
			return p[0], nil
		}
		select {
		case <-r.changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

type serverConn struct {
	rv   *Reviewer
	path string
	c    *net.UnixConn
	info ServerInfo

	wmu  sync.Mutex
	acks map[string]chan message // guarded by rv.mu
	dead bool                    // guarded by rv.mu
}

func (s *serverConn) read() {
	r := s.rv
	defer r.wg.Done()
	br := bufio.NewReaderSize(s.c, 1<<16)
	for {
		line, err := readLine(br)
		if err != nil {
			break
		}
		var m message
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		r.mu.Lock()
		switch m.Type {
		case "hello":
			if m.Server != nil {
				s.info = *m.Server
			}
		case "request":
			if m.Request == nil {
				break
			}
			if k := (openKey{s.path, m.Request.ID}); r.open[k] == nil {
				r.open[k] = &Incoming{Request: m.Request, Server: s.info, rv: r, server: s.path, decider: s, gone: make(chan struct{})}
			}
		case "settled":
			r.goneLocked(s.path, m.ID, "it was decided (by another reviewer, or by policy)")
		case "withdrawn":
			r.goneLocked(s.path, m.ID, "the worker's push went away, so the request was withdrawn")
		case "ack":
			if m.Error == "" {
				// Decided here: the server acknowledges before it tells
				// every reviewer "settled", and the next Next must not
				// offer the request again in between.
				r.goneLocked(s.path, m.ID, "it was decided here")
			}
			if ch := s.acks[m.ID]; ch != nil {
				ch <- m
				delete(s.acks, m.ID)
			}
		}
		r.mu.Unlock()
		r.signal()
	}
	s.c.Close()
	r.mu.Lock()
	s.dead = true
	for k := range r.open {
		if k.server == s.path {
			r.goneLocked(s.path, k.id, "its server went away")
		}
	}
	for id, ch := range s.acks {
		close(ch)
		delete(s.acks, id)
	}
	delete(r.servers, s.path)
	r.mu.Unlock()
	r.signal()
}

// openKey names an open request: its server's key (a socket's path, or
// the name another source gave it) and its id.
type openKey struct {
	server string
	id     string
}

func (r *Reviewer) goneLocked(s string, id, why string) {
	k := openKey{s, id}
	if in := r.open[k]; in != nil {
		in.why = why
		close(in.gone)
		delete(r.open, k)
	}
}

// Decide sends d over the socket and waits for the server's answer.
func (s *serverConn) Decide(sd approval.SignedDecision) (approval.Decision, error) {
	r := s.rv
	d := sd.Decision
	ch := make(chan message, 1)
	r.mu.Lock()
	if s.dead {
		r.mu.Unlock()
		return approval.Decision{}, errors.New("the server went away; the push was not decided")
	}
	s.acks[d.Request] = ch
	r.mu.Unlock()
	s.wmu.Lock()
	err := json.NewEncoder(s.c).Encode(message{Type: "decision", Signed: &sd})
	s.wmu.Unlock()
	if err != nil {
		return approval.Decision{}, fmt.Errorf("sending the decision: %w", err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return approval.Decision{}, errors.New("the server went away before confirming the decision")
		}
		if m.Error != "" {
			return approval.Decision{}, errors.New(m.Error)
		}
		return *m.Decision, nil
	case <-time.After(5 * time.Minute):
		return approval.Decision{}, errors.New("the server did not confirm the decision")
	}
}
