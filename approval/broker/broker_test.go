package broker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/approval/review"
)

// server is one airlock server's approval side: a gate and its broker.
type server struct {
	gate   *approval.Gate
	broker *broker.Broker
}

func newServer(t *testing.T, dir, ledgerPath, worker string) *server {
	t.Helper()
	l, err := ledger.Open(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	g := approval.NewGate(l, approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys})
	b, err := broker.Listen(g, dir, broker.ServerInfo{PID: os.Getpid(), Worker: worker, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &server{g, b}
}

func socketDir(t *testing.T) string {
	// Unix socket paths are short; t.TempDir can be too long for them.
	dir, err := os.MkdirTemp("", "al")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "run")
}

func watch(t *testing.T, dir string) *broker.Reviewer {
	t.Helper()
	r, err := broker.Watch(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r.SetKey(approvaltest.ReviewerKey())
	t.Cleanup(r.Close)
	return r
}

// eventually waits for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// Generous: it only bounds a failure, and under load two child test
	// binaries built with the race detector take seconds to start.
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func pendingIDs(r *broker.Reviewer) map[string]*broker.Incoming {
	out := map[string]*broker.Incoming{}
	for _, in := range r.Pending() {
		out[in.Request.ID] = in
	}
	return out
}

func requestFor(worker string) *approval.Request {
	r := approvaltest.SampleRequest()
	r.Worker = worker
	r.New = approvaltest.Hash(worker)
	return r
}

func TestBrokerTwoServersTwoReviewers(t *testing.T) {
	dir := socketDir(t)
	ledgerPath := filepath.Join(t.TempDir(), "ledger.jsonl")
	a := newServer(t, dir, ledgerPath, "writer-a")
	b := newServer(t, dir, ledgerPath, "writer-b")
	ta, _ := a.gate.Submit(requestFor("writer-a"), nil)
	tb, _ := b.gate.Submit(requestFor("writer-b"), nil)
	r1, r2 := watch(t, dir), watch(t, dir)
	for _, r := range []*broker.Reviewer{r1, r2} {
		eventually(t, "both requests reach both reviewers", func() bool { return len(r.Pending()) == 2 })
	}
	idA, idB := ta.Request().ID, tb.Request().ID
	inA1 := pendingIDs(r1)[idA]
	inA2 := pendingIDs(r2)[idA]
	if inA1.Server.Worker != "writer-a" || inA1.Request.Diff == "" {
		t.Errorf("incoming %+v", inA1)
	}
	// Reviewer 1 approves A; reviewer 2 sees it settled.
	d, err := inA1.Decide(approval.Decision{Verdict: approval.Approve})
	if err != nil || d.Verdict != approval.Approve {
		t.Fatalf("decide A: %+v %v", d, err)
	}
	if _, gr, err := wait(t, ta); err != nil || !gr.Valid() {
		t.Fatalf("A after approval: %v", err)
	}
	select {
	case <-inA2.Gone():
		if !strings.Contains(inA2.Why(), "decided") {
			t.Errorf("why: %s", inA2.Why())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reviewer 2 still shows A as open")
	}
	if _, err := inA2.Decide(approval.Decision{Verdict: approval.Reject}); err == nil {
		t.Error("a second decision on A was accepted")
	}
	// Reviewer 2 rejects B with a reason, which the worker gets.
	if _, err := pendingIDs(r2)[idB].Decide(approval.Decision{Verdict: approval.Reject, Reason: "wrong branch"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wait(t, tb); !errors.Is(err, approval.ErrRejected) || !strings.Contains(err.Error(), "wrong branch") {
		t.Errorf("B: %v", err)
	}
	if rep, _ := ledger.Verify(ledgerPath); !rep.OK() || rep.Records != 4 {
		t.Errorf("shared ledger: %+v %+v", rep, rep.Broken)
	}
}

// A reviewer who disconnects in the middle of a prompt decides nothing: the
// request stays open for another.
func TestBrokerReviewerDisconnects(t *testing.T) {
	dir := socketDir(t)
	s := newServer(t, dir, filepath.Join(t.TempDir(), "l.jsonl"), "w")
	tk, _ := s.gate.Submit(requestFor("w"), nil)
	r1 := watch(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r1.Next(ctx); err != nil { // reviewer 1 is looking at it...
		t.Fatal(err)
	}
	r1.Close() // ...and goes away
	if len(s.gate.Pending()) != 1 {
		t.Fatal("the request did not stay pending")
	}
	r2 := watch(t, dir)
	in, err := r2.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Decide(approval.Decision{Verdict: approval.Approve}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wait(t, tk); err != nil {
		t.Error(err)
	}
}

// A server that goes away takes its requests with it; reviewers are told.
func TestBrokerServerDisconnects(t *testing.T) {
	dir := socketDir(t)
	s := newServer(t, dir, filepath.Join(t.TempDir(), "l.jsonl"), "w")
	s.gate.Submit(requestFor("w"), nil)
	r := watch(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.broker.Close()
	select {
	case <-in.Gone():
		if !strings.Contains(in.Why(), "server went away") {
			t.Errorf("why: %s", in.Why())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reviewer still shows a request whose server is gone")
	}
	if _, err := in.Decide(approval.Decision{Verdict: approval.Approve}); err == nil {
		t.Error("deciding for a server that is gone succeeded")
	}
	if _, err := os.Stat(s.broker.Path()); !os.IsNotExist(err) {
		t.Error("the socket was left behind")
	}
}

func TestBrokerWithdrawalAndLateServers(t *testing.T) {
	dir := socketDir(t)
	r := watch(t, dir) // the reviewer starts first
	s := newServer(t, dir, filepath.Join(t.TempDir(), "l.jsonl"), "late")
	tk, _ := s.gate.Submit(requestFor("late"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.gate.Withdraw(tk.Request().ID, "the client disconnected")
	select {
	case <-in.Gone():
		if !strings.Contains(in.Why(), "withdrawn") {
			t.Errorf("why: %s", in.Why())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a withdrawn request is still shown")
	}
}

// cancelScript is a scripted terminal whose reads can be cancelled, as the
// TTY's can, and whose screen can be read while a prompt writes to it.
type cancelScript struct {
	approvaltest.Script
	mu       sync.Mutex
	screen   strings.Builder
	keys     chan rune
	canceled chan struct{}
}

func (c *cancelScript) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.screen.Write(p)
}

func (c *cancelScript) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.screen.String()
}

func (c *cancelScript) ReadKey() (rune, error) {
	c.mu.Lock()
	canceled := c.canceled
	c.mu.Unlock()
	select {
	case k := <-c.keys:
		return k, nil
	case <-canceled:
		return 0, review.ErrCanceled
	}
}

func (c *cancelScript) Cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.canceled)
}

func (c *cancelScript) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.canceled = make(chan struct{})
}

func TestReviewLoop(t *testing.T) {
	dir := socketDir(t)
	s := newServer(t, dir, filepath.Join(t.TempDir(), "l.jsonl"), "w")
	first, _ := s.gate.Submit(requestFor("first"), nil)
	r := watch(t, dir)
	term := &cancelScript{Script: approvaltest.Script{TTY: true}, keys: make(chan rune, 10), canceled: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- review.Review(ctx, r, term, false) }()
	// The first request is withdrawn while on screen: the prompt is taken
	// down, and the next one shown.
	eventually(t, "the first request is shown", func() bool { return strings.Contains(term.String(), `worker "first"`) })
	s.gate.Withdraw(first.Request().ID, "client went away")
	eventually(t, "the first request is taken down", func() bool { return strings.Contains(term.String(), "This request is gone") })
	second, _ := s.gate.Submit(requestFor("second"), nil)
	eventually(t, "the second request is shown", func() bool { return strings.Contains(term.String(), `worker "second"`) })
	term.keys <- 'a'
	if _, gr, err := wait(t, second); err != nil || !gr.Valid() {
		t.Fatalf("second: %v\n%s", err, term.String())
	}
	eventually(t, "the reviewer is told", func() bool { return strings.Contains(term.String(), "Approved; the push goes ahead.") })
	cancel()
	<-done
}

func TestSocketDirMustBePrivate(t *testing.T) {
	dir := socketDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	l, _ := ledger.Open(filepath.Join(t.TempDir(), "l"))
	defer l.Close()
	if _, err := broker.Listen(approval.NewGate(l, approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys}), dir, broker.ServerInfo{}); err == nil {
		t.Error("a socket was offered in a directory others can enter")
	}
	os.Chmod(dir, 0o700)
	b, err := broker.Listen(approval.NewGate(l, approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys}), dir, broker.ServerInfo{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if fi, _ := os.Stat(b.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v", fi.Mode().Perm())
	}
}

// Real server processes, each with a pending push; one reviewer decides
// both.
func TestBrokerRealProcesses(t *testing.T) {
	if os.Getenv("AIRLOCK_SERVER_CHILD") != "" {
		t.Skip("child")
	}
	dir := socketDir(t)
	ledgerPath := filepath.Join(t.TempDir(), "ledger.jsonl")
	var cmds []*exec.Cmd
	outs := map[string]*strings.Builder{}
	for _, w := range []string{"alpha", "beta"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBrokerServerChild$")
		cmd.Env = append(os.Environ(), "AIRLOCK_SERVER_CHILD="+w, "AIRLOCK_DIR="+dir, "AIRLOCK_LEDGER="+ledgerPath)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		outs[w] = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	r := watch(t, dir)
	eventually(t, "both servers' requests arrive", func() bool { return len(r.Pending()) == 2 })
	for _, in := range r.Pending() {
		v := approval.Approve
		if in.Request.Worker == "beta" {
			v = approval.Reject
		}
		if _, err := in.Decide(approval.Decision{Verdict: v, Reason: "not beta's turn"}); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("server %d: %v\n%s", i, err, outs[[]string{"alpha", "beta"}[i]])
		}
	}
	if !strings.Contains(outs["alpha"].String(), "OUTCOME approved") || !strings.Contains(outs["beta"].String(), "OUTCOME rejected: push rejected: not beta's turn") {
		t.Errorf("outcomes:\nalpha: %s\nbeta: %s", outs["alpha"], outs["beta"])
	}
	if rep, _ := ledger.Verify(ledgerPath); !rep.OK() || rep.Records != 4 {
		t.Errorf("ledger %+v", rep)
	}
}

func TestBrokerServerChild(t *testing.T) {
	worker := os.Getenv("AIRLOCK_SERVER_CHILD")
	if worker == "" {
		t.Skip("run by TestBrokerRealProcesses")
	}
	l, err := ledger.Open(os.Getenv("AIRLOCK_LEDGER"))
	if err != nil {
		t.Fatal(err)
	}
	g := approval.NewGate(l, approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys})
	b, err := broker.Listen(g, os.Getenv("AIRLOCK_DIR"), broker.ServerInfo{PID: os.Getpid(), Worker: worker})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tk, err := g.Submit(requestFor(worker), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, err = tk.Wait(ctx)
	if err != nil {
		fmt.Println("OUTCOME rejected:", err)
	} else {
		fmt.Println("OUTCOME approved")
	}
}

// A reviewer that decides one request is offered the next one, never the
// one it just decided (the server's ack arrives before its "settled").
func TestBrokerNextAfterADecision(t *testing.T) {
	dir := socketDir(t)
	s := newServer(t, dir, filepath.Join(t.TempDir(), "l.jsonl"), "w")
	r := watch(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	const n = approval.MaxPending
	for i := 0; i < n; i++ {
		req := requestFor("w")
		req.Ref = fmt.Sprintf("refs/heads/r%d", i)
		if _, err := s.gate.Submit(req, nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "all requests offered", func() bool { return len(r.Pending()) == n })
	decided := map[string]bool{}
	for i := 0; i < n; i++ {
		in, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if decided[in.Request.ID] {
			t.Fatalf("decision %d: offered %s again, which was just decided", i, in.Request.Ref)
		}
		if _, err := in.Decide(approval.Decision{Verdict: approval.Approve}); err != nil {
			t.Fatalf("decision %d: %v", i, err)
		}
		decided[in.Request.ID] = true
	}
}

// TestDeadServersSocketsGo: a server killed with SIGKILL leaves its socket;
// the next server to listen removes it, and keeps a running server's
// socket, a socket of its own PID that is not yet listening, and one a
// process of a PID that is gone still listens on (another PID namespace).
func TestDeadServersSocketsGo(t *testing.T) {
	if os.Getenv("AIRLOCK_SERVER_CHILD") != "" {
		t.Skip("child")
	}
	dir := socketDir(t)
	killed := exec.Command(os.Args[0], "-test.run=^TestBrokerServerChild$")
	killed.Env = append(os.Environ(), "AIRLOCK_SERVER_CHILD=killed", "AIRLOCK_DIR="+dir, "AIRLOCK_LEDGER="+filepath.Join(t.TempDir(), "l"))
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	var stale string
	eventually(t, "the child listens", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("server-%d-*.sock", killed.Process.Pid)))
		if len(m) == 1 {
			stale = m[0]
		}
		return stale != ""
	})
	killed.Process.Kill()
	killed.Wait()
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("SIGKILL left no socket behind: %v", err)
	}
	running := newServer(t, dir, filepath.Join(t.TempDir(), "l"), "running")
	// Not listening yet, of a running process (this one).
	starting := filepath.Join(dir, fmt.Sprintf("server-%d-starting.sock", os.Getpid()))
	unbound(t, starting)
	// Listening, named by the dead child's PID.
	other := filepath.Join(dir, fmt.Sprintf("server-%d-othernamespace.sock", killed.Process.Pid))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: other, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	newServer(t, dir, filepath.Join(t.TempDir(), "l"), "next")
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed server's socket is still there: %v", err)
	}
	for _, p := range []string{running.broker.Path(), starting, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}

// unbound leaves a socket file at path that nothing listens on.
func unbound(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}
