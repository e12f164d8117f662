//go:build unix

package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/crashpoint"
)

// Undo (issue 33): a decision can be undone until its push starts
// landing, within the server's window (serve --undo-window; short here).

// undoWindow is the tests' window: long enough for a loaded machine to
// press u in it, short enough to wait out.
const undoWindow = 3 * time.Second

// stageAndPush has the worker change a.txt and push, and waits for its
// request.
func stageAndPush(t *testing.T, w *worker) {
	t.Helper()
	w.call("git_pull", map[string]any{})
	w.call("write_file", map[string]any{"path": "a.txt", "content": numbered("alpha", 30) + "alpha, the change\n"})
	w.call("git_stage", map[string]any{"message": "Change a"})
	if out := w.call("git_push", map[string]any{}); !strings.Contains(out, "req-") {
		t.Fatalf("git_push did not wait for a reviewer: %s", out)
	}
}

// undoRecords are, of the ledger, the decisions and the undos of id.
func undoRecords(t *testing.T, path, id string) (decisions, undos []string) {
	t.Helper()
	for _, r := range readLedger(t, path) {
		var d struct{ Request, Verdict, Undone string }
		_ = json.Unmarshal(r.Data, &d) // a record of another shape counts for nothing
		switch {
		case d.Request != id:
		case r.Kind == ledger.KindDecision:
			decisions = append(decisions, d.Verdict)
		case r.Kind == ledger.KindWithdrawal && d.Undone != "":
			undos = append(undos, d.Undone)
		}
	}
	return decisions, undos
}

// stillAt checks, past the window, that branch has not moved from base.
func stillAt(t *testing.T, env []string, repo, base string) {
	t.Helper()
	time.Sleep(undoWindow + 500*time.Millisecond)
	if head := strings.TrimSpace(mustGit(t, env, repo, "rev-parse", "main")); head != base {
		t.Fatalf("an undone approval landed: main moved to %s", head)
	}
}

var requestID = regexp.MustCompile(`Request (req-[0-9a-f]+) from`)

// TestUndoBeforeLanding: a real `airlock serve` and a real `airlock
// review` in a terminal. The reviewer approves, sees "Landing in 3 s: u
// to undo", presses u: nothing lands (not past the window either), the
// ledger holds the decision and its undo, `airlock ledger show` says so,
// and the push is asked again at once as a new request that says why.
// Approved again, with any other key at the offer, it lands.
func TestUndoBeforeLanding(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	k := newKillRig(t)
	base := strings.TrimSpace(mustGit(t, k.env, k.bare, "rev-parse", "main"))
	d := startDurable(t, ctx, bin, k.env, k.root, "--worker", k.wf, "--timeout", "1s", "--undo-window", undoWindow.String())
	stageAndPush(t, d.w)

	rv := startReview(t, bin, k.env, k.root)
	scr := rv.Screen
	const within = 20 * time.Second
	approve := func(at int) int {
		t.Helper()
		at = scr.WaitFor(t, at, "[?]help", within)
		rv.Press(t, "a")
		if seen, next := scr.WaitForAny(t, at, within, "Type yes", "Landing in"); seen == "Type yes" {
			rv.Press(t, "yes\r")
			at = next
		}
		return scr.WaitFor(t, at, "Landing in 3 s: u to undo, any other key to go on.", within)
	}
	at := approve(0)
	m := requestID.FindAllStringSubmatch(scr.String(), -1)
	if len(m) != 1 {
		t.Fatalf("the screen names %d requests:\n%s", len(m), scr.String())
	}
	id := m[0][1]
	rv.Press(t, "u")
	at = scr.WaitFor(t, at, "Undone: nothing lands and the worker is told nothing; the push is asked again.", within)
	at = scr.WaitFor(t, at, "Asked again: you saw request "+id+"; you undid your decision.", within)
	stillAt(t, k.env, k.bare, base)
	if decisions, undos := undoRecords(t, k.ledger, id); len(decisions) != 1 || decisions[0] != "approve" || len(undos) != 1 || undos[0] != "approve" {
		t.Fatalf("the ledger holds decisions %v and undos %v of %s; want the approval and its undo", decisions, undos, id)
	}
	out, _, code := runAirlock(t, k.env, k.root, "ledger", "show")
	mustContain(t, "airlock ledger show", out, id+"  push approved by", id+"  the push request withdrawn:", "undid their approval before it landed")
	if code != 0 {
		t.Fatalf("airlock ledger show exited %d", code)
	}

	at = approve(at)
	rv.Press(t, "\r")
	scr.WaitFor(t, at, "Not undone; it takes effect when its window ends.", within)
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		if head := strings.TrimSpace(mustGit(t, k.env, k.bare, "rev-parse", "main")); head != base {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the approval asked again, not undone, never landed")
		}
	}
	if a := mustGit(t, k.env, k.bare, "show", "main:a.txt"); !strings.HasSuffix(a, "alpha, the change\n") {
		t.Fatalf("main's a.txt:\n%s", a)
	}
	rv.Press(t, "\x03")
	if code := rv.Wait(t, within); code != 0 {
		t.Errorf("airlock review exited %d after Ctrl-C", code)
	}
}

// TestUndoSurvivesAKill: the server is SIGKILLed just after the ledger
// records the reviewer's undo, inside the window, before the push is
// asked again. After the restart the approval never lands; the request
// is not offered again under its id (its one decision stands, undone)
// but as a new one that says why; the ledger verifies.
func TestUndoSurvivesAKill(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	k := newKillRig(t)
	base := strings.TrimSpace(mustGit(t, k.env, k.bare, "rev-parse", "main"))
	args := []string{"--worker", k.wf, "--timeout", "1s", "--undo-window", undoWindow.String()}
	d := startDurable(t, ctx, bin, append(append([]string(nil), k.env...), "AIRLOCK_TEST_CRASH_AT="+crashpoint.UndoRecorded), k.root, args...)
	stageAndPush(t, d.w)

	rv, err := broker.Watch(ctx, k.sockets)
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	signAs(t, rv, k.root)
	in, err := rv.Next(ctx)
	if err != nil {
		t.Fatalf("no request reached the reviewer: %v", err)
	}
	id := in.Request.ID
	// As airlock review's prompt decides: its screen offers the undo.
	dec, err := in.Decide(approval.Decision{Verdict: approval.Approve, Undoable: true})
	if err != nil || dec.UndoUntil.IsZero() {
		t.Fatalf("the approval: %+v, %v; want one held for undo", dec, err)
	}
	if err := in.Undo(); err == nil {
		t.Fatal("the undo was answered by a server that was to die recording it")
	}
	d.wait(t)
	if !strings.Contains(d.cmd.ProcessState.String(), "killed") {
		t.Fatalf("the server was not killed after the undo: %s\n%s", d.cmd.ProcessState, d.stderr.String())
	}

	again := startDurable(t, ctx, bin, k.env, k.root, args...)
	again.w.ledger = k.ledger
	rv2, err := broker.Watch(ctx, k.sockets)
	if err != nil {
		t.Fatal(err)
	}
	defer rv2.Close()
	signAs(t, rv2, k.root)
	in2, err := rv2.Next(ctx)
	if err != nil {
		t.Fatalf("the undone push was not asked again after the restart: %v", err)
	}
	if s := in2.Request.Since; in2.Request.ID == id || s == nil || s.Request != id || s.Why != approval.WhyUndone {
		t.Fatalf("after the restart %s is offered, since %+v; want a new request saying %s was undone", in2.Request.ID, s, id)
	}
	stillAt(t, k.env, k.bare, base)
	if decisions, undos := undoRecords(t, k.ledger, id); len(decisions) != 1 || len(undos) != 1 {
		t.Fatalf("the ledger holds decisions %v and undos %v of %s; want one of each", decisions, undos, id)
	}
	if _, err := in2.Decide(approval.Decision{Verdict: approval.Reject, Reason: "not after all"}); err != nil {
		t.Fatal(err)
	}
	checkLanded(t, k.env, k.bare, "main", base, approval.Reject)
	if out, errOut, code := runAirlock(t, k.env, k.root, "ledger", "verify"); code != 0 {
		t.Fatalf("airlock ledger verify exited %d:\n%s%s", code, out, errOut)
	}
}
