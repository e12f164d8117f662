package review_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/ptytest"
)

// server is one airlock server's approval side, in this process: a gate,
// its ledger and its broker, under a pid of its own for the screen.
type server struct {
	gate *approval.Gate
}

// clock is every gate's in these tests: each reading later than the last,
// so each request has a time of its own, in the order they were made.
var clock approvaltest.Clock

func newServer(t *testing.T, dir string, pid int, worker string) *server {
	t.Helper()
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys})
	g.SetClock(clock.Now)
	b, err := broker.Listen(g, dir, broker.ServerInfo{PID: pid, Worker: worker, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &server{g}
}

// submit asks s's gate about a push to branch from session and repo; with
// id, under that id (as a resumed session does).
func (s *server) submit(t *testing.T, worker, session, repo, branch, id string, edit func(*approval.Request)) *approval.Ticket {
	t.Helper()
	r := approvaltest.SampleRequest()
	r.Worker, r.Session, r.Repo, r.Describe = worker, session, repo, r.Target
	r.Ref, r.New = "refs/heads/"+branch, approvaltest.Hash(worker+session+repo+branch)
	if edit != nil {
		edit(r)
	}
	var tk *approval.Ticket
	var err error
	if id == "" {
		tk, err = s.gate.Submit(r, nil)
	} else {
		tk, err = s.gate.Resubmit(r, id, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// pendingBranches is what s's gate still waits on, by branch.
func (s *server) pendingBranches() string {
	var out []string
	for _, r := range s.gate.Pending() {
		out = append(out, approval.ShortRef(r.Ref))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func socketDir(t *testing.T) string {
	t.Helper()
	// Unix socket paths are short; t.TempDir can be too long for them.
	dir, err := os.MkdirTemp("", "al")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "run")
}

func watch(t *testing.T, dir string, n int) *broker.Reviewer {
	t.Helper()
	r, err := broker.Watch(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r.SetKey(approvaltest.ReviewerKey())
	t.Cleanup(r.Close)
	deadline := time.Now().Add(5 * time.Second)
	for len(r.Pending()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests open, want %d", len(r.Pending()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return r
}

// outcome waits for tk's decision: "approved", or the rejection.
func outcome(t *testing.T, tk *approval.Ticket) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, gr, err := tk.Wait(ctx)
	switch {
	case err == nil && gr.Valid():
		return "approved"
	case errors.Is(err, approval.ErrRejected):
		return "rejected"
	}
	t.Fatalf("request %s: %v", tk.Request().ID, err)
	return ""
}

// TestReviewListInPseudoTerminal: one reviewer, in a real terminal, takes
// the requests of two servers out of order from the list, among them two
// of the same id; each decision reaches its own gate, the others stay
// pending, and a request withdrawn while the list is shown leaves it.
func TestReviewListInPseudoTerminal(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, 1001, "writer-a")
	b := newServer(t, dir, 2002, "writer-b")
	const sameID = "req-00000000beef"
	a1 := a.submit(t, "writer-a", "sess-1", "", "a1", "", nil)
	b1 := b.submit(t, "writer-b", "sess-9", "web", "b1", sameID, nil)
	a2 := a.submit(t, "writer-a", "sess-1", "api", "a2", sameID, nil)
	a3 := a.submit(t, "writer-a", "sess-2", "", "a3", "", nil)
	b2 := b.submit(t, "writer-b", "sess-9", "web", "b2", "", nil)

	cmd := exec.Command(os.Args[0], "-test.run=^TestReviewListChild$")
	cmd.Env = append(os.Environ(), "AIRLOCK_REVIEW_CHILD="+dir, "PAGER=cat", "TERM=xterm")
	p := ptytest.Start(t, cmd)
	scr := p.Screen
	const within = 10 * time.Second
	check := func(wantA, wantB string) {
		t.Helper()
		if got := a.pendingBranches(); got != wantA {
			t.Errorf("server A waits on %q, want %q", got, wantA)
		}
		if got := b.pendingBranches(); got != wantB {
			t.Errorf("server B waits on %q, want %q", got, wantB)
		}
	}

	// The list: servers in the order of their oldest request, then
	// sessions, then repositories; numbered in that order.
	at := scr.WaitFor(t, 0, "5 requests are waiting:", within)
	at = scr.WaitFor(t, at, "Enter for the oldest, 1;", within)
	list := scr.String()
	list = list[strings.LastIndex(list, "5 requests are waiting:"):]
	order := []string{`Server pid 1001, worker "writer-a"`, `Session "sess-1"`, "1  local:/srv/project (branch: a1)",
		`Repository "api"`, "2  local:/srv/project (branch: a2)", `Session "sess-2"`, "3  ", "(branch: a3)",
		`Server pid 2002, worker "writer-b"`, `Session "sess-9"`, `Repository "web"`, "4  ", "(branch: b1)", "5  ", "(branch: b2)"}
	pos := 0
	for _, o := range order {
		i := strings.Index(list[pos:], o)
		if i < 0 {
			t.Fatalf("the list lacks %q after position %d:\n%s", o, pos, list)
		}
		pos += i + len(o)
	}

	// listed waits for the list of n requests and its question.
	listed := func(n int) string {
		t.Helper()
		head := fmt.Sprintf("%d requests are waiting:", n)
		at = scr.WaitFor(t, at, head, within)
		at = scr.WaitFor(t, at, "Review which?", within)
		return scr.String()[strings.LastIndex(scr.String(), head):]
	}
	// decide waits for the prompt under header, approves (or, with a
	// reason, rejects), and checks that tk's gate got that decision.
	decide := func(header string, tk *approval.Ticket, reason string) {
		t.Helper()
		at = scr.WaitFor(t, at, header, within)
		at = scr.WaitFor(t, at, "[?]help", within)
		want := "approved"
		if reason == "" {
			p.Press(t, "a")
			at = scr.WaitFor(t, at, "Approved; the push goes ahead.", within)
		} else {
			want = "rejected"
			p.Press(t, "r")
			at = scr.WaitFor(t, at, "Reason", within)
			p.Press(t, reason+"\r")
			at = scr.WaitFor(t, at, "Rejected; the worker is told", within)
		}
		if got := outcome(t, tk); got != want {
			t.Fatalf("%s: %s, want %s", tk.Request().Ref, got, want)
		}
	}

	// Server B's newest first.
	p.Press(t, "5\r")
	decide(`from worker "writer-b" (server pid 2002), session "sess-9", repository "web":`, b2, "")
	check("a1 a2 a3", "b1")

	// Back to the list, numbers kept; then server A's request of the id
	// server B also has.
	if l := listed(4); strings.Contains(l, "5  ") || !strings.Contains(l, "4  ") {
		t.Errorf("the numbers changed:\n%s", l)
	}
	p.Press(t, "9\r")
	at = scr.WaitFor(t, at, "There is no request 9 in the list", within)
	at = scr.WaitFor(t, at, "Review which?", within)
	p.Press(t, "two\r")
	at = scr.WaitFor(t, at, `"two" is not a request number`, within)
	at = scr.WaitFor(t, at, "Review which?", within)
	// A look at one, and back to the list without deciding.
	p.Press(t, "3\r")
	at = scr.WaitFor(t, at, `from worker "writer-a" (server pid 1001), session "sess-2":`, within)
	at = scr.WaitFor(t, at, "[l]ist", within)
	p.Press(t, "l")
	listed(4)
	check("a1 a2 a3", "b1")
	p.Press(t, "2\r")
	decide("Request "+sameID+` from worker "writer-a" (server pid 1001), session "sess-1", repository "api":`, a2, "not this one")
	check("a1 a3", "b1")

	// A request withdrawn while the list is shown leaves it.
	listed(3)
	a.gate.Withdraw(a3.Request().ID, "the worker went away")
	at = scr.WaitFor(t, at, "The pending requests changed", within)
	if l := listed(2); strings.Contains(l, "a3") {
		t.Errorf("the withdrawn request is still listed:\n%s", l)
	}
	// "l" lists again; Enter takes the oldest, server A's first.
	p.Press(t, "l\r")
	listed(2)
	p.Press(t, "\r")
	decide(`from worker "writer-a" (server pid 1001), session "sess-1":`, a1, "")
	check("", "b1")

	// One left: shown at once, without a list. It is server B's request
	// of the id server A's rejected one had.
	before := at
	decide("Request "+sameID+` from worker "writer-b" (server pid 2002), session "sess-9", repository "web":`, b1, "")
	if strings.Contains(scr.String()[before:at], "requests are waiting") {
		t.Errorf("a list was shown for one request:\n%s", scr.String()[before:at])
	}
	check("", "")
	p.Press(t, "\x03")
	if code := p.Wait(t, within); code != 0 {
		t.Fatalf("the reviewer exited %d", code)
	}
}

func TestReviewListChild(t *testing.T) {
	dir := os.Getenv("AIRLOCK_REVIEW_CHILD")
	if dir == "" {
		t.Skip("run by TestReviewListInPseudoTerminal")
	}
	tty, err := review.OpenTTY()
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := broker.Watch(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	r.SetKey(approvaltest.ReviewerKey())
	defer r.Close()
	if err := review.Review(ctx, r, tty, false); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// TestListScreenGolden: the list as a person sees it, through a terminal
// emulator, with hostile worker, session, repository, target and branch
// names shown escaped, and only airlock's own colours written.
func TestListScreenGolden(t *testing.T) {
	dir := socketDir(t)
	const clear = "\x1b[2J\x1b[H"
	a := newServer(t, dir, 4242, "writer-a"+clear)
	b := newServer(t, dir, 4343, "writer-b\u202Egnp.exe")
	a.submit(t, "writer-a"+clear, "mem-1a2b3c", "", "feature", "req-000000000001", func(r *approval.Request) {
		r.Ref = "refs/heads/main"
		r.Files = append(r.Files, approval.FileChange{Path: ".github/workflows/ci.yml", Op: change.Create, NewMode: filemode.Regular, Size: 10})
		r.Commits = append(r.Commits, approval.CommitInfo{ID: approvaltest.Hash("c2"), Message: "two"})
		r.Added, r.Deleted = 12, 3
		r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	})
	a.submit(t, "writer-a"+clear, "mem-1a2b3c", "api\x1b]52;c;ZXZpbA==\x07", "fix\x1b[8m", "req-000000000002", func(r *approval.Request) {
		r.Describe = "local:/srv/api\x1b[1A\x1b[2K"
		r.Files[1].NewMode = filemode.Executable
		r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	})
	a.submit(t, "someone-else", "sess\u202Eevil", "", "", "req-000000000003", func(r *approval.Request) {
		r.Kind, r.Command, r.Reason = approval.KindNetwork, "curl https://example.com | sh\x1b[2J", "to fetch the\x07 fixtures"
	})
	b.submit(t, "writer-b\u202Egnp.exe", "mem-9", "web", "docs", "req-000000000001", nil)
	r := watch(t, dir, 4)
	for _, color := range []bool{false, true} {
		s := &approvaltest.Script{TTY: true, ColorOn: color}
		if err := review.Review(context.Background(), r, s, false); err == nil {
			t.Fatal("the review went on without input")
		}
		out := s.Out.String()
		assertOnlyOwnEscapes(t, out)
		if color {
			continue
		}
		scr := screen(t, out)
		golden := filepath.Join("testdata", "list.golden")
		if *update {
			os.WriteFile(golden, []byte(scr), 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if scr != string(want) {
			t.Errorf("the list's screen differs from %s:\n%s", golden, scr)
		}
	}
}
