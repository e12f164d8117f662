package broker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
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

	conn *serverConn
	gone chan struct{}
	why  string
}

// Gone is closed when the request is no longer open: another reviewer
// decided it, it was withdrawn, or its server went away.
func (in *Incoming) Gone() <-chan struct{} { return in.gone }

// Why says why the request is gone.
func (in *Incoming) Why() string {
	in.conn.rv.mu.Lock()
	defer in.conn.rv.mu.Unlock()
	return in.why
}

// Decide sends d to the request's server and returns the decision as the
// server recorded it (for Pick, with the commit made of the picked files).
func (in *Incoming) Decide(d approval.Decision) (approval.Decision, error) {
	d.Request = in.Request.ID
	return in.conn.decide(d)
}

// Reviewer is a reviewer's connection to every running server.
type Reviewer struct {
	dir    string
	cancel context.CancelFunc

	mu      sync.Mutex
	servers map[string]*serverConn // by socket path
	// open holds the open requests by server and id: each server mints
	// its own ids (and a resumed session offers its old ones again), so
	// two servers may offer the same id.
	open    map[openKey]*Incoming
	changed chan struct{}
	wg      sync.WaitGroup
}

// Watch connects to every server in dir (see SocketDir), and to servers
// that start later, until ctx ends or Close.
func Watch(ctx context.Context, dir string) (*Reviewer, error) {
	if err := privateDir(dir); err != nil {
		return nil, fmt.Errorf("reviewer: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Reviewer{dir: dir, cancel: cancel, servers: map[string]*serverConn{},
		open: map[openKey]*Incoming{}, changed: make(chan struct{}, 1)}
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

// Close disconnects from every server. Requests stay pending there.
func (r *Reviewer) Close() {
	r.cancel()
	r.wg.Wait()
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
	if a.conn.path != b.conn.path {
		return a.conn.path < b.conn.path
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
			if k := (openKey{s, m.Request.ID}); m.Request != nil && r.open[k] == nil {
				r.open[k] = &Incoming{Request: m.Request, Server: s.info, conn: s, gone: make(chan struct{})}
			}
		case "settled":
			r.goneLocked(s, m.ID, "it was decided (by another reviewer, or by policy)")
		case "withdrawn":
			r.goneLocked(s, m.ID, "the worker's push went away, so the request was withdrawn")
		case "ack":
			if m.Error == "" {
				// Decided here: the server acknowledges before it tells
				// every reviewer "settled", and the next Next must not
				// offer the request again in between.
				r.goneLocked(s, m.ID, "it was decided here")
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
		if k.server == s {
			r.goneLocked(s, k.id, "its server went away")
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

// openKey names an open request: its server's connection and its id.
type openKey struct {
	server *serverConn
	id     string
}

func (r *Reviewer) goneLocked(s *serverConn, id, why string) {
	k := openKey{s, id}
	if in := r.open[k]; in != nil {
		in.why = why
		close(in.gone)
		delete(r.open, k)
	}
}

func (s *serverConn) decide(d approval.Decision) (approval.Decision, error) {
	r := s.rv
	ch := make(chan message, 1)
	r.mu.Lock()
	if s.dead {
		r.mu.Unlock()
		return approval.Decision{}, errors.New("the server went away; the push was not decided")
	}
	s.acks[d.Request] = ch
	r.mu.Unlock()
	s.wmu.Lock()
	err := json.NewEncoder(s.c).Encode(message{Type: "decision", Decision: &d})
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
