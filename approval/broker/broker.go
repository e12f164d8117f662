package broker

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/approval"
)

// The broker lets a reviewer in another terminal answer the requests of
// servers that cannot prompt on their own stdin (an MCP server's stdin is
// its client's pipe). Each server listens on a Unix socket of its own in a
// directory only its user can enter; a reviewer connects to every socket
// there. Messages are JSON, one per line.

// ServerInfo says which server offers a request.
type ServerInfo struct {
	PID     int       `json:"pid"`
	Worker  string    `json:"worker"`
	Started time.Time `json:"started"`
}

type message struct {
	Type     string             `json:"type"` // hello, request, settled, withdrawn, decision, ack
	Server   *ServerInfo        `json:"server,omitempty"`
	Request  *approval.Request  `json:"request,omitempty"`
	ID       string             `json:"id,omitempty"`
	Decision *approval.Decision `json:"decision,omitempty"`
	Error    string             `json:"error,omitempty"`
}

// maxMessage bounds one message; a request carries its whole diff.
const maxMessage = 64 << 20

// SocketDir is where servers' sockets live, the rendezvous of servers and
// reviewers. Both sides must find the same place whatever their
// environment: MCP clients such as Codex and the TypeScript SDK start
// servers without XDG_RUNTIME_DIR, so it is not read. The place is
// $AIRLOCK_RUNTIME_DIR/airlock when that is set (set it for both sides),
// else /run/user/UID/airlock when /run/user/UID is the user's own private
// directory (systemd makes it), else /tmp/airlock-UID.
func SocketDir() (string, error) {
	if d := os.Getenv("AIRLOCK_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "airlock"), nil
	}
	uid := os.Getuid()
	run := filepath.Join("/run/user", strconv.Itoa(uid))
	if fi, err := os.Lstat(run); err == nil && fi.IsDir() && fi.Mode().Perm()&0o077 == 0 {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
			return filepath.Join(run, "airlock"), nil
		}
	}
	return filepath.Join("/tmp", "airlock-"+strconv.Itoa(uid)), nil
}

// StateDir is airlock's own state directory (the ledger): $AIRLOCK_STATE_DIR
// when set, else ~/.local/state/airlock with the home directory taken from
// the user database, not $HOME or $XDG_STATE_HOME, which MCP clients may
// drop or change: a server and a reviewer must write and read one ledger.
func StateDir() (string, error) {
	if d := os.Getenv("AIRLOCK_STATE_DIR"); d != "" {
		return d, nil
	}
	home := ""
	if u, err := user.Current(); err == nil {
		home = u.HomeDir
	}
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory: set AIRLOCK_STATE_DIR: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "airlock"), nil
}

// userName is uid's login name, or "uid N".
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return u.Username
	}
	return fmt.Sprintf("uid %d", uid)
}

// privateDir creates dir with mode 0700, or checks that an existing one
// belongs to this user and is closed to everyone else.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symlink?); airlock will not offer requests there: remove it", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is open to other users (mode %v); make it private: chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to another user; airlock will not offer requests there", dir)
	}
	return nil
}

// Broker offers a Gate's pending requests to reviewers.
type Broker struct {
	gate *approval.Gate
	ln   *net.UnixListener
	path string
	info ServerInfo

	mu     sync.Mutex
	conns  map[*net.UnixConn]bool
	closed bool
	wg     sync.WaitGroup
	// inflight counts decisions between arrival and their ack: a decision
	// wakes the waiting push, which may close the broker at once, and the
	// reviewer must still hear that it was recorded.
	inflight sync.WaitGroup
}

// Listen opens a socket for gate in dir (see SocketDir) and serves
// reviewers until Close.
func Listen(gate *approval.Gate, dir string, info ServerInfo) (*Broker, error) {
	if err := privateDir(dir); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	sweep(dir)
	var rnd [4]byte
	rand.Read(rnd[:])
	path := filepath.Join(dir, fmt.Sprintf("server-%d-%s.sock", os.Getpid(), hex.EncodeToString(rnd[:])))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	b := &Broker{gate: gate, ln: ln, path: path, info: info, conns: map[*net.UnixConn]bool{}}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// sweep removes the sockets in dir of servers that are gone: a server
// killed (SIGKILL, a crash, a power cut of a persistent runtime
// directory) leaves its socket behind, and every reviewer would try it
// again. A socket goes only when the process its name gives (server-PID-…)
// is not running and nothing answers on it: a server of another PID
// namespace, or one between bind and listen, is left alone.
func sweep(dir string) {
	paths, _ := filepath.Glob(filepath.Join(dir, "server-*.sock"))
	for _, p := range paths {
		var pid int
		var rest string
		if n, _ := fmt.Sscanf(filepath.Base(p), "server-%d-%s", &pid, &rest); n != 2 || pid <= 0 || Alive(pid) {
			continue
		}
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: p, Net: "unix"})
		if err == nil {
			_ = c.Close() // it answered: a server is there
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			_ = os.Remove(p) // another server may have swept it first
		}
	}
}

// Alive reports whether a process pid runs (as far as this process can
// tell: one of another user's counts as running).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Path is the socket's path.
func (b *Broker) Path() string { return b.path }

// Close stops serving and removes the socket. Reviewers see the server go.
// Decisions already received are acknowledged first.
func (b *Broker) Close() error {
	acked := make(chan struct{})
	go func() { b.inflight.Wait(); close(acked) }()
	select {
	case <-acked:
	case <-time.After(2 * time.Second):
	}
	b.mu.Lock()
	b.closed = true
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	err := b.ln.Close()
	b.wg.Wait()
	return err
}

func (b *Broker) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.AcceptUnix()
		if err != nil {
			return
		}
		who, err := checkPeer(c)
		if err != nil {
			c.Close()
			continue
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			c.Close()
			return
		}
		b.conns[c] = true
		b.mu.Unlock()
		b.wg.Add(1)
		go b.serve(c, who)
	}
}

// serve talks to one reviewer: everything pending, then every change, and
// its decisions back to the gate.
func (b *Broker) serve(c *net.UnixConn, who string) {
	defer b.wg.Done()
	defer func() {
		b.mu.Lock()
		delete(b.conns, c)
		b.mu.Unlock()
		c.Close()
	}()
	var wmu sync.Mutex
	enc := json.NewEncoder(c)
	send := func(m message) error {
		wmu.Lock()
		defer wmu.Unlock()
		return enc.Encode(m)
	}
	events, stop := b.gate.Subscribe()
	defer stop()
	info := b.info
	if send(message{Type: "hello", Server: &info}) != nil {
		return
	}
	for _, r := range b.gate.Pending() {
		if send(message{Type: "request", Request: r}) != nil {
			return
		}
	}
	decisions := make(chan approval.Decision)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		r := bufio.NewReaderSize(c, 1<<16)
		for {
			line, err := readLine(r)
			if err != nil {
				return
			}
			var m message
			if json.Unmarshal(line, &m) != nil || m.Type != "decision" || m.Decision == nil {
				continue
			}
			// A decision is a verdict, a reason and picked paths, by the
			// user the kernel names; anything else it says is ignored.
			d := m.Decision
			b.inflight.Add(1)
			decisions <- approval.Decision{Request: d.Request, Verdict: d.Verdict, Reason: d.Reason, Paths: d.Paths, Scope: d.Scope, By: who}
		}
	}()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return
			}
			m := message{ID: e.Request.ID}
			switch e.Kind {
			case approval.EventAdded:
				m.Type, m.Request = "request", e.Request
			case approval.EventResolved:
				m.Type = "settled"
			case approval.EventWithdrawn:
				m.Type = "withdrawn"
			}
			if send(m) != nil {
				return
			}
		case d := <-decisions:
			res, err := b.gate.Resolve(d)
			ack := message{Type: "ack", ID: d.Request, Decision: &res}
			if err != nil {
				ack.Error = err.Error()
			}
			serr := send(ack)
			b.inflight.Done()
			if serr != nil {
				return
			}
		case <-readerDone:
			return // the reviewer went away; its requests stay pending
		}
	}
}

func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxMessage {
			return nil, errors.New("message too large")
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, err
	}
}

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
