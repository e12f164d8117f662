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

// A pick's commits are dated with its decision's time (PickAsk.At is the
// ledger's Time), and a gate that starts again on the ledger (a restart)
// gives the request back decided: a grant for the pick's commit, nothing
// appended, nobody asked; a stale decision of it is refused, saying who
// decided it and when.
func TestDecidedPickSurvivesARestart(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{})
	picks := make(chan *approval.PickAsk, 1)
	req := approvaltest.SampleRequest()
	if _, err := g.Submit(req, picks); err != nil {
		t.Fatal(err)
	}
	made := approvaltest.Hash("picked")
	var at time.Time
	go func() {
		ask := <-picks
		at = ask.At
		ask.Made(made, nil)
	}()
	dec, err := g.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Pick, Paths: []string{"report.md"}, By: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if at.IsZero() || !dec.Time.Equal(at) {
		t.Fatalf("the pick was made at %v, the decision says %v", at, dec.Time)
	}
	recs, _ := ledger.Records(l.Path())

	again := approval.NewGate(l, approval.Policy{})
	tk, err := again.Resubmit(approvaltest.SampleRequest(), req.ID, make(chan *approval.PickAsk))
	if err != nil || !tk.Final() || len(again.Pending()) != 0 {
		t.Fatalf("Resubmit of a decided pick: final %v, pending %d, %v", tk != nil && tk.Final(), len(again.Pending()), err)
	}
	d, grant, err := tk.Wait(t.Context())
	if err != nil || grant.New() != made || d.Verdict != approval.Pick || !d.Time.Equal(at) || len(d.Paths) != 1 {
		t.Fatalf("the decided ticket: %+v, grant for %v, %v", d, grant.New(), err)
	}
	if now, _ := ledger.Records(l.Path()); len(now) != len(recs) {
		t.Fatalf("Resubmit of a decided request appended %d records", len(now)-len(recs))
	}
	_, err = again.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve})
	if !errors.Is(err, approval.ErrAlreadyDecided) || !errors.Is(err, approval.ErrNotPending) ||
		!strings.Contains(err.Error(), "already decided: pick by carol at "+at.UTC().Format(time.RFC3339)) {
		t.Fatalf("a stale decision: %v", err)
	}
	if now, _ := ledger.Records(l.Path()); len(now) != len(recs) {
		t.Fatal("a refused decision was recorded")
	}
}

// A rejection the ledger holds comes back from Resubmit as the rejection
// the worker is told, with the reviewer's reason.
func TestDecidedRejectionSurvivesARestart(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{})
	req := approvaltest.SampleRequest()
	if _, err := g.Submit(req, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject, Reason: "too big"}); err != nil {
		t.Fatal(err)
	}
	tk, err := approval.NewGate(l, approval.Policy{}).Resubmit(approvaltest.SampleRequest(), req.ID, nil)
	if err != nil || !tk.Final() {
		t.Fatalf("Resubmit of a rejected request: %v", err)
	}
	if _, _, err := tk.Wait(t.Context()); !errors.Is(err, approval.ErrRejected) || !strings.Contains(err.Error(), "too big") {
		t.Fatalf("the rejection told: %v", err)
	}
}
