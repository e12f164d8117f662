package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/airlock-dev/airlock/approval"
)

// Issue 33: a reviewer's approval waits the undo window before its push
// lands. Undone within it, nothing lands and the push is asked again, as
// a new request of the same git_push that says why; approved again, it
// lands once the window ends, and an undo after the landing started is
// refused. An approval no screen can undo (a script's) lands at once.
func TestUndoneApprovalIsAskedAgain(t *testing.T) {
	kp, err := nkeys.CreateUser()
	must(t, err)
	pub, _ := kp.PublicKey()
	const window = 400 * time.Millisecond
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{policy: approval.Policy{ReviewerKeys: []string{pub}, UndoWindow: window}})
	base := strings.TrimSpace(git(t, r, "rev-parse", "main"))
	e.write(t, "a.txt", "a\n")
	_, err = e.s.Stage(nil, "A")
	must(t, err)
	done := make(chan error, 1)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	first := waitPending(t, e.gate, 1)[0]
	decide := func(req *approval.Request, d approval.Decision) (approval.Decision, error) {
		t.Helper()
		s, err := approval.Sign(kp, req, d)
		must(t, err)
		return e.gate.ResolveSigned(s, "test")
	}
	dec, err := decide(first, approval.Decision{Verdict: approval.Approve, By: "alice", Undoable: true})
	must(t, err)
	if dec.UndoUntil.IsZero() {
		t.Fatal("an approval whose screen offers undo is not held")
	}
	_, err = decide(first, approval.Decision{Verdict: approval.Undo, By: "alice"})
	must(t, err)
	second := waitPending(t, e.gate, 1)[0]
	if second.ID == first.ID || second.New != first.New || second.Since == nil || second.Since.Request != first.ID || second.Since.Why != approval.WhyUndone {
		t.Fatalf("asked again as %s (%s), since %+v", second.ID, second.New, second.Since)
	}
	time.Sleep(window + 200*time.Millisecond)
	if head := strings.TrimSpace(git(t, r, "rev-parse", "main")); head != base {
		t.Fatalf("the undone approval landed: main at %s", head)
	}
	select {
	case err := <-done:
		t.Fatalf("git_push answered while its push is asked again: %v", err)
	default:
	}
	start := time.Now()
	_, err = decide(second, approval.Decision{Verdict: approval.Approve, By: "alice", Undoable: true})
	must(t, err)
	must(t, <-done)
	if waited := time.Since(start); waited < window-50*time.Millisecond {
		t.Errorf("the approval landed after %v, within its undo window of %v", waited, window)
	}
	if _, err := decide(second, approval.Decision{Verdict: approval.Undo, By: "alice"}); !errors.Is(err, approval.ErrTooLateToUndo) {
		t.Fatalf("an undo after the landing: %v", err)
	}
	if head := strings.TrimSpace(git(t, r, "rev-parse", "main")); head == base {
		t.Fatal("the approval asked again never landed")
	}

	// A script's approval: no undo offered, no wait.
	e.write(t, "b.txt", "b\n")
	_, err = e.s.Stage(nil, "B")
	must(t, err)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	third := waitPending(t, e.gate, 1)[0]
	dec, err = decide(third, approval.Decision{Verdict: approval.Approve, By: "script"})
	must(t, err)
	must(t, <-done)
	// Not held: nothing to wait for (a bound on the time the push took
	// failed on a loaded machine, where a push alone took longer than the
	// window).
	if !dec.UndoUntil.IsZero() {
		t.Errorf("an approval no screen can undo is held until %v", dec.UndoUntil)
	}
}

// A rejection is held too: the worker is not told within the window, and
// undone, the push is asked again (not refused as a change rejected).
func TestUndoneRejectionIsAskedAgain(t *testing.T) {
	kp, err := nkeys.CreateUser()
	must(t, err)
	pub, _ := kp.PublicKey()
	const window = 400 * time.Millisecond
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{policy: approval.Policy{ReviewerKeys: []string{pub}, UndoWindow: window}})
	e.write(t, "a.txt", "a\n")
	_, err = e.s.Stage(nil, "A")
	must(t, err)
	done := make(chan error, 1)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	first := waitPending(t, e.gate, 1)[0]
	decide := func(req *approval.Request, d approval.Decision) {
		t.Helper()
		s, err := approval.Sign(kp, req, d)
		must(t, err)
		_, err = e.gate.ResolveSigned(s, "test")
		must(t, err)
	}
	decide(first, approval.Decision{Verdict: approval.Reject, Reason: "wrong key", By: "alice", Undoable: true})
	decide(first, approval.Decision{Verdict: approval.Undo, By: "alice"})
	second := waitPending(t, e.gate, 1)[0]
	if second.Since == nil || second.Since.Why != approval.WhyUndone {
		t.Fatalf("asked again with since %+v", second.Since)
	}
	time.Sleep(window + 200*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the worker was told of an undone rejection: %v", err)
	default:
	}
	decide(second, approval.Decision{Verdict: approval.Approve, By: "alice"})
	must(t, <-done)
}
