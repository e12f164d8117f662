package broker

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/crashpoint"
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
	// Host and Name are set by a fleet's queue: the machine the server
	// runs on, and the name the server is known by in the queue for as
	// long as it runs. Both come from the server: sanitise before showing.
	Host string `json:"host,omitempty"`
	Name string `json:"name,omitempty"`
}

type message struct {
	Type     string             `json:"type"` // hello, request, settled, withdrawn, decision, ack
	Server   *ServerInfo        `json:"server,omitempty"`
	Request  *approval.Request  `json:"request,omitempty"`
	ID       string             `json:"id,omitempty"`
	Decision *approval.Decision `json:"decision,omitempty"`
	// Signed is a reviewer's decision with its signature (type
	// decision); Decision alone, unsigned, is refused.
	Signed *approval.SignedDecision `json:"signed,omitempty"`
	Error  string                   `json:"error,omitempty"`
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
	decisions := make(chan approval.SignedDecision)
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
			if json.Unmarshal(line, &m) != nil || m.Type != "decision" {
				continue
			}
			// The gate verifies the reviewer's signature over the
			// decision and the request pending: a decision without one
			// (m.Decision alone) reaches it unsigned, to be refused and
			// recorded as such.
			var s approval.SignedDecision
			switch {
			case m.Signed != nil:
				s = *m.Signed
			case m.Decision != nil:
				s.Decision = *m.Decision
			default:
				continue
			}
			b.inflight.Add(1)
			decisions <- s
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
			// The ledger names the reviewer as the kernel names the
			// peer, which the reviewer signs as its name: a decision
			// naming anyone else is taken as altered (its signature
			// then fails), refused and recorded with the name it gave.
			from := "the broker's socket, from a process of user " + who
			if d.Decision.By != who {
				from += fmt.Sprintf(" (the decision named its reviewer %q)", d.Decision.By)
				d.Decision.By = who
			}
			res, err := b.gate.ResolveSigned(d, from)
			ack := message{Type: "ack", ID: d.Decision.Request, Decision: &res}
			if err != nil {
				ack.Error = err.Error()
			}
			serr := send(ack)
			crashpoint.Hit(crashpoint.ReviewerAnswered)
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
