package approval_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// Issue 33: a reviewer's approval whose screen offers undo waits the
// window; undone within it (signed, as a decision is), it never lands:
// Land refuses, the ledger holds the decision and a withdrawal that says
// it was undone, and a gate started again on that ledger (a restart)
// neither carries the decision out nor offers the request under its id:
// it asks a new one, saying why. An undo after the landing started, one
// of another request's fingerprint, and one by an untrusted key change
// nothing.
func TestUndoWithinTheWindow(t *testing.T) {
	kp, pub := reviewerKey(t)
	other, _ := reviewerKey(t)
	l := approvaltest.NewLedger(t)
	policy := approval.Policy{ReviewerKeys: []string{pub}, UndoWindow: time.Minute}
	g := approval.NewGate(l, policy)
	req := approvaltest.SampleRequest()
	tk, err := g.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(k approval.Signer, r *approval.Request, d approval.Decision) approval.SignedDecision {
		t.Helper()
		s, err := approval.Sign(k, r, d)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := time.Now()
	d, err := g.ResolveSigned(sign(kp, req, approval.Decision{Verdict: approval.Approve, By: "alice", Undoable: true}), "test")
	if err != nil {
		t.Fatal(err)
	}
	if until := tk.UndoUntil(); until.Before(before.Add(time.Minute-time.Second)) || !d.UndoUntil.Equal(until) {
		t.Fatalf("undo until %v (decision says %v), want a minute from now", until, d.UndoUntil)
	}
	if _, err := g.ResolveSigned(sign(other, req, approval.Decision{Verdict: approval.Undo, By: "mallory"}), "test"); !errors.Is(err, approval.ErrUnverified) {
		t.Fatalf("an undo by an untrusted key: %v", err)
	}
	changed := *req
	changed.Diff += "+more\n"
	if _, err := g.ResolveSigned(sign(kp, &changed, approval.Decision{Verdict: approval.Undo, By: "alice"}), "test"); !errors.Is(err, approval.ErrUnverified) {
		t.Fatalf("an undo signed over another request: %v", err)
	}
	select {
	case <-tk.Undone():
		t.Fatal("a refused undo undid the decision")
	default:
	}
	if _, err := g.ResolveSigned(sign(kp, req, approval.Decision{Verdict: approval.Undo, By: "alice"}), "test"); err != nil {
		t.Fatal(err)
	}
	<-tk.Undone()
	if err := g.Land(tk); !errors.Is(err, approval.ErrUndone) {
		t.Fatalf("Land of an undone approval: %v", err)
	}
	recs, _ := ledger.Records(l.Path())
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	last := recs[len(recs)-1]
	if strings.Join(kinds, " ") != "request decision refused refused withdrawal" || !strings.Contains(string(last.Data), `"undone":"approve"`) || !strings.Contains(string(last.Data), pub) {
		t.Fatalf("the ledger holds %v; the last: %s", kinds, last.Data)
	}

	if _, err := g.ResolveSigned(sign(kp, req, approval.Decision{Verdict: approval.Approve, By: "alice"}), "test"); !errors.Is(err, approval.ErrNotPending) || !strings.Contains(err.Error(), "undone") {
		t.Fatalf("a second decision of the undone request: %v", err)
	}
	again := approval.NewGate(l, policy)
	if _, ok, err := again.Decided(req.ID); ok || err != nil {
		t.Fatalf("the undone decision is still one to carry out after a restart: %v %v", ok, err)
	}
	tk2, err := again.Resubmit(approvaltest.SampleRequest(), req.ID, nil)
	if err != nil || tk2.Final() {
		t.Fatalf("Resubmit of an undone request: %v", err)
	}
	if r2 := tk2.Request(); r2.ID == req.ID || r2.Since == nil || r2.Since.Request != req.ID || r2.Since.Why != approval.WhyUndone {
		t.Fatalf("asked again as %s, since %+v", r2.ID, r2.Since)
	}
}

// An approval whose landing started cannot be undone; one whose screen
// did not offer undo (a script's), and the policy's, land at once.
func TestNoUndoOnceLanding(t *testing.T) {
	kp, pub := reviewerKey(t)
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{ReviewerKeys: []string{pub}, UndoWindow: time.Minute, AutoApprove: []string{"local:/auto"}})
	req := approvaltest.SampleRequest()
	tk, err := g.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := approval.Sign(kp, req, approval.Decision{Verdict: approval.Approve, By: "alice", Undoable: true})
	if _, err := g.ResolveSigned(s, "test"); err != nil {
		t.Fatal(err)
	}
	if err := g.Land(tk); err != nil {
		t.Fatal(err)
	}
	u, _ := approval.Sign(kp, req, approval.Decision{Verdict: approval.Undo, By: "alice"})
	if _, err := g.ResolveSigned(u, "test"); !errors.Is(err, approval.ErrTooLateToUndo) || !strings.Contains(err.Error(), "started landing") {
		t.Fatalf("an undo after the landing started: %v", err)
	}
	script := approvaltest.SampleRequest()
	script.Ref = "refs/heads/other"
	tk2, _ := g.Submit(script, nil)
	s2, _ := approval.Sign(kp, script, approval.Decision{Verdict: approval.Approve, By: "alice"})
	if _, err := g.ResolveSigned(s2, "test"); err != nil || !tk2.UndoUntil().IsZero() {
		t.Fatalf("an approval no screen can undo is held until %v (%v)", tk2.UndoUntil(), err)
	}
	auto := approvaltest.SampleRequest()
	auto.Target = "local:/auto"
	tk3, err := g.Submit(auto, nil)
	if err != nil || !tk3.UndoUntil().IsZero() {
		t.Fatalf("the policy's approval is held until %v (%v)", tk3.UndoUntil(), err)
	}
}

// A rejection is held as an approval is: undone, it is forgotten as a
// rejection (the same change asked again is asked, not refused at once
// as repeat-denied), in this gate and in one started again on its ledger.
func TestUndoARejection(t *testing.T) {
	kp, pub := reviewerKey(t)
	l := approvaltest.NewLedger(t)
	policy := approval.Policy{ReviewerKeys: []string{pub}, UndoWindow: time.Minute}
	g := approval.NewGate(l, policy)
	req := approvaltest.SampleRequest()
	tk, err := g.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := approval.Sign(kp, req, approval.Decision{Verdict: approval.Reject, Reason: "typo", By: "alice", Undoable: true})
	if _, err := g.ResolveSigned(s, "test"); err != nil {
		t.Fatal(err)
	}
	if tk.UndoUntil().IsZero() {
		t.Fatal("a rejection whose screen offers undo is not held")
	}
	u, _ := approval.Sign(kp, req, approval.Decision{Verdict: approval.Undo, By: "alice"})
	if _, err := g.ResolveSigned(u, "test"); err != nil {
		t.Fatal(err)
	}
	if err := g.Land(tk); !errors.Is(err, approval.ErrUndone) {
		t.Fatalf("Land of an undone rejection: %v", err)
	}
	for name, gate := range map[string]*approval.Gate{"this gate": g, "a gate started again": approval.NewGate(l, policy)} {
		again := approvaltest.SampleRequest()
		tk2, err := gate.Submit(again, nil)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-tk2.Done():
			d, _, err := tk2.Wait(t.Context())
			t.Fatalf("%s: the same change, its rejection undone, was decided at once: %+v, %v", name, d, err)
		default:
		}
		if err := gate.Withdraw(tk2.Request().ID, "done"); err != nil {
			t.Fatal(err)
		}
	}
}
