package approval_test

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// TestForgedLedgerDecisionIsNotCarriedOut: a decision in the ledger is
// final (final.go), and a resumed request whose id the ledger holds a
// decision of is carried out as the ledger says. In a fleet every server
// appends to one ledger (airlock.ledger, which the servers' NATS user may
// write), so any server, or anyone who reaches an open NATS, could append
// "approve by mallory" for another server's waiting request: the server
// that resumed it landed the push, no reviewer's key asked.
func TestForgedLedgerDecisionIsNotCarriedOut(t *testing.T) {
	kp, pub := reviewerKey(t)
	l := approvaltest.NewLedger(t)
	policy := approval.Policy{ReviewerKeys: []string{pub}}
	g := approval.NewGate(l, policy)
	req := approvaltest.SampleRequest()
	tk, err := g.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Request().ID
	// Another writer of the shared ledger.
	if _, err := l.Append(ledger.KindDecision, map[string]any{"request": id, "verdict": "approve", "by": "mallory",
		"new": req.New.String()}); err != nil {
		t.Fatal(err)
	}
	// The server restarts (or another resumes the session) and offers
	// the request again under its id.
	g2 := approval.NewGate(l, policy)
	again := approvaltest.SampleRequest()
	tk2, err := g2.Resubmit(again, id, nil)
	if err != nil {
		t.Fatalf("offered again: %v", err)
	}
	d, gr, err := wait(t, tk2)
	if err == nil && d.Approved() {
		t.Fatalf("a decision no reviewer signed, appended to the ledger, was carried out: %+v, grant for %s", d, gr.New())
	}

	// The reviewer's own decision, signed, is still carried out by the
	// server that offers its request again.
	other := approvaltest.SampleRequest()
	other.New, other.Tree = approvaltest.Hash("other"), approvaltest.Hash("other-tree")
	pick := picker(t, func([]string) (plumbing.Hash, error) { return approvaltest.Hash("picked"), nil })
	tk3, err := g2.Submit(other, pick)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g2.ResolveSigned(signed(approval.Sign(kp, tk3.Request(), approval.Decision{Verdict: approval.Approve, By: "alice"})), "test"); err != nil {
		t.Fatal(err)
	}
	g3 := approval.NewGate(l, policy)
	resumed := approvaltest.SampleRequest()
	resumed.New, resumed.Tree = approvaltest.Hash("other"), approvaltest.Hash("other-tree")
	tk4, err := g3.Resubmit(resumed, tk3.Request().ID, pick)
	if err != nil {
		t.Fatal(err)
	}
	if d, gr, err := wait(t, tk4); err != nil || !d.Approved() || gr.New() != resumed.New {
		t.Fatalf("the reviewer's signed approval, resumed: %+v, %v", d, err)
	}
}

// TestResumedPickWhoseCommitIsStaged: a session saved after its pick's
// commits replaced the request's offers again a request of the pick's
// commit, not the one the reviewer signed. The signed pick is carried out
// when the ledger's first record of the request holds the fingerprint it
// was signed over (TestDecisionSurvivesAKill/pick/saved was refused
// before: "signed over another request"); a ledger that recorded no
// fingerprint leaves nothing to check it against, and it is refused.
func TestResumedPickWhoseCommitIsStaged(t *testing.T) {
	kp, pub := reviewerKey(t)
	policy := approval.Policy{ReviewerKeys: []string{pub}}
	picked := approvaltest.Hash("picked")
	pick := picker(t, func([]string) (plumbing.Hash, error) { return picked, nil })
	overPick := func() *approval.Request {
		r := approvaltest.SampleRequest()
		r.New, r.Tree = picked, approvaltest.Hash("picked-tree")
		r.Commits = r.Commits[:0]
		return r
	}

	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, policy)
	tk, err := g.Submit(approvaltest.SampleRequest(), pick)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Request().ID
	if _, err := g.ResolveSigned(signed(approval.Sign(kp, tk.Request(), approval.Decision{Verdict: approval.Pick, Paths: []string{"report.md"}, By: "alice"})), "test"); err != nil {
		t.Fatal(err)
	}
	tk2, err := approval.NewGate(l, policy).Resubmit(overPick(), id, pick)
	if err != nil {
		t.Fatal(err)
	}
	if d, gr, err := wait(t, tk2); err != nil || d.Verdict != approval.Pick || gr.New() != picked {
		t.Fatalf("the signed pick, resumed over its staged commit: %+v, %v", d, err)
	}

	// A ledger whose request record carries no fingerprint (written
	// before it did): the same signed pick is refused.
	old := approvaltest.NewLedger(t)
	req := approvaltest.SampleRequest()
	req.ID = "req-0123456789ab"
	s, err := approval.Sign(kp, req, approval.Decision{Verdict: approval.Pick, Paths: []string{"report.md"}, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Append(ledger.KindRequest, map[string]any{"id": req.ID, "target": req.Target, "ref": req.Ref}); err != nil {
		t.Fatal(err)
	}
	d := s.Decision
	d.Fingerprint, d.Key, d.Sig, d.New = s.Fingerprint, s.Key, s.Sig, picked
	if _, err := old.Append(ledger.KindDecision, d); err != nil {
		t.Fatal(err)
	}
	tk3, err := approval.NewGate(old, policy).Resubmit(overPick(), req.ID, pick)
	if err != nil {
		t.Fatal(err)
	}
	if d, _, err := wait(t, tk3); err == nil && d.Approved() {
		t.Fatalf("a pick read back with no recorded fingerprint to check its signature against was carried out: %+v", d)
	}
}
