package approval_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"errors"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/nats-io/nkeys"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
)

// TestPickNamingAFileTwiceIsNotTheWholePush: a pick counts the files it
// names, so naming one file twice in a push of two was taken as naming
// both: approved whole, the file nobody picked landed with it.
func TestPickNamingAFileTwiceIsNotTheWholePush(t *testing.T) {
	kp, pub := reviewerKey(t)
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{ReviewerKeys: []string{pub}})
	picked := approvaltest.Hash("picked")
	tk, err := g.Submit(approvaltest.SampleRequest(), picker(t, func([]string) (plumbing.Hash, error) { return picked, nil }))
	if err != nil {
		t.Fatal(err)
	}
	req := tk.Request()
	s := signed(approval.Sign(kp, req, approval.Decision{Verdict: approval.Pick, Paths: []string{"report.md", "report.md"}, By: "alice"}))
	d, err := g.ResolveSigned(s, "test")
	if err == nil && (d.Verdict == approval.Approve || d.New == req.New) {
		t.Fatalf("a pick of report.md (named twice) approved the whole push, data.json with it: %+v", d)
	}
	if err == nil {
		t.Fatalf("a pick naming a file twice was taken: %+v; want it refused as a malformed selection", d)
	}
	if len(g.Pending()) != 1 {
		t.Fatal("a refused pick decided the request")
	}
}

// TestUnfingerprintableRequestIsNeverApproved: a request that cannot be
// fingerprinted (here a flag of no severity, which does not survive
// JSON) had the fingerprint "", equal to that of every other such
// request: a decision signed over one of them verified for another.
func TestUnfingerprintableRequestIsNeverApproved(t *testing.T) {
	kp, pub := reviewerKey(t)
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{ReviewerKeys: []string{pub}})
	req := approvaltest.SampleRequest()
	req.Flags = []approval.Flag{{Code: "odd", Message: "a flag of no severity"}}
	if _, err := g.Submit(req, nil); err != nil {
		t.Fatal(err)
	}
	shown := *req
	shown.Diff, shown.Files = "diff --git a/README b/README\n", shown.Files[:1]
	s, err := approval.Sign(kp, &shown, approval.Decision{Verdict: approval.Approve, By: "alice"})
	if err == nil {
		if d, err := g.ResolveSigned(s, "test"); err == nil {
			t.Fatalf("a decision signed over another request was applied: %+v", d)
		} else if !errors.Is(err, approval.ErrUnverified) {
			t.Fatalf("refused, but not as unverified: %v", err)
		}
	}
	if len(g.Pending()) != 1 {
		t.Fatal("the request was decided")
	}
}

// TestResolveSignedAppliesToTheRequestItVerified: between ResolveSigned's
// checks and the decision's taking effect, the request verified was
// withdrawn and another offered under its id (a session resumed); the
// decision, signed over the first, was applied to the second.
func TestResolveSignedAppliesToTheRequestItVerified(t *testing.T) {
	kp, pub := reviewerKey(t)
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{ReviewerKeys: []string{pub}})
	first := approvaltest.SampleRequest()
	tk, err := g.Submit(first, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Request().ID
	s := signed(approval.Sign(kp, first, approval.Decision{Verdict: approval.Approve, By: "alice"}))
	var second *approval.Ticket
	defer approval.SetTestHookVerified(func() {
		if err := g.Withdraw(id, "the session stopped"); err != nil {
			t.Error(err)
			return
		}
		other := approvaltest.SampleRequest()
		other.New, other.Diff = approvaltest.Hash("evil"), "diff --git a/evil b/evil\n"
		if second, err = g.Resubmit(other, id, nil); err != nil {
			t.Error(err)
		}
	})()
	d, err := g.ResolveSigned(s, "test")
	if err == nil {
		t.Fatalf("a decision signed over %s's first request was applied to the one offered under its id meanwhile: %+v", id, d)
	}
	if second == nil || len(g.Pending()) != 1 {
		t.Fatalf("the request offered again should still wait: %v", g.Pending())
	}
}

// TestUnfingerprintableRequestCanBeRejected: what cannot be approved can
// still be answered.
func TestUnfingerprintableRequestCanBeRejected(t *testing.T) {
	kp, pub := reviewerKey(t)
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{ReviewerKeys: []string{pub}})
	req := approvaltest.SampleRequest()
	req.Flags = []approval.Flag{{Code: "odd", Message: "a flag of no severity"}}
	tk, err := g.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.ResolveSigned(signed(approval.Sign(kp, req, approval.Decision{Verdict: approval.Reject, By: "alice"})), "test"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wait(t, tk); !errors.Is(err, approval.ErrRejected) {
		t.Fatalf("the push: %v, want rejected", err)
	}
}

// TestLedgerDecisionVerifiesAgain: the ledger keeps a signed decision's
// key, signature and fingerprint so that anyone can check the record
// later against the reviewer's key; the gate wrote its own clock's time
// over the time the reviewer signed, so no record verified.
func TestLedgerDecisionVerifiesAgain(t *testing.T) {
	kp, pub := reviewerKey(t)
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{ReviewerKeys: []string{pub}})
	picked := approvaltest.Hash("picked")
	pick := picker(t, func([]string) (plumbing.Hash, error) { return picked, nil })
	decisions := []approval.Decision{
		{Verdict: approval.Approve, By: "alice"},
		{Verdict: approval.Reject, Reason: "no", By: "alice"},
		{Verdict: approval.Pick, Paths: []string{"report.md"}, By: "alice"},
	}
	for i, d := range decisions {
		req := approvaltest.SampleRequest()
		req.New, req.Tree = approvaltest.Hash(fmt.Sprint("n", i)), approvaltest.Hash(fmt.Sprint("t", i))
		if _, err := g.Submit(req, pick); err != nil {
			t.Fatal(err)
		}
		d.Time = time.Now().Add(-time.Minute) // a reviewer's clock a minute behind
		if _, err := g.ResolveSigned(signed(approval.Sign(kp, req, d)), "test"); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := l.Records()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Kind != ledger.KindDecision {
			continue
		}
		n++
		var d approval.Decision
		if err := json.Unmarshal(r.Data, &d); err != nil {
			t.Fatal(err)
		}
		msg, err := approval.SignedBytes(d, d.Fingerprint, d.Key)
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := base64.StdEncoding.DecodeString(d.Sig)
		k, err := nkeys.FromPublicKey(d.Key)
		if err != nil {
			t.Fatalf("record %d: key %q: %v", r.Seq, d.Key, err)
		}
		if err := k.Verify(msg, sig); err != nil {
			t.Errorf("the ledger's %s decision (record %d) does not verify under its own key: %v\n%s", d.Verdict, r.Seq, err, r.Data)
		}
	}
	if n != len(decisions) {
		t.Fatalf("%d decisions in the ledger, want %d", n, len(decisions))
	}
}

// TestRefusalsDoNotFillTheLedger: every forged decision was a ledger
// record of its own, so whoever could write decisions (any reviewer's
// NATS user, a same-user process on the socket) grew the ledger without
// bound until it could take no more, and then every push was refused. The
// first refusals of a request are recorded one by one, then at each
// doubling with the count.
func TestRefusalsDoNotFillTheLedger(t *testing.T) {
	_, pub := reviewerKey(t)
	mallory, _ := reviewerKey(t)
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{ReviewerKeys: []string{pub}})
	req := approvaltest.SampleRequest()
	if _, err := g.Submit(req, nil); err != nil {
		t.Fatal(err)
	}
	const forged = 1000
	for i := range forged {
		s := signed(approval.Sign(mallory, req, approval.Decision{Verdict: approval.Approve, By: fmt.Sprint("mallory ", i)}))
		if _, err := g.ResolveSigned(s, "test"); !errors.Is(err, approval.ErrUnverified) {
			t.Fatalf("forged decision %d: %v", i, err)
		}
	}
	recs, err := l.Records()
	if err != nil {
		t.Fatal(err)
	}
	var refused []map[string]any
	for _, r := range recs {
		if r.Kind == ledger.KindRefused {
			var m map[string]any
			if err := json.Unmarshal(r.Data, &m); err != nil {
				t.Fatal(err)
			}
			refused = append(refused, m)
		}
	}
	if len(refused) > 16 {
		t.Fatalf("%d forged decisions of one request made %d ledger records", forged, len(refused))
	}
	if len(refused) == 0 || refused[len(refused)-1]["refusals"] != float64(512) {
		t.Fatalf("the last refusal record does not say how many came: %v", refused[len(refused)-1:])
	}
}

// TestForgedDecisionsCostLittle: ResolveSigned fingerprinted the pending
// request (a JSON round trip of its whole diff, tens of MiB) before it
// looked at the signature, so every forged decision cost the server that:
// a writer of the decisions bucket kept its cores busy with a few a
// second. A decision no trusted key signed is refused first.
func TestForgedDecisionsCostLittle(t *testing.T) {
	_, pub := reviewerKey(t)
	mallory, _ := reviewerKey(t)
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{ReviewerKeys: []string{pub}})
	req := approvaltest.SampleRequest()
	req.Diff = strings.Repeat("+a line of a large diff, with \"quotes\" and <html> to escape\n", 1<<16) // 4 MiB
	if _, err := g.Submit(req, nil); err != nil {
		t.Fatal(err)
	}
	forged := []approval.SignedDecision{
		{Decision: approval.Decision{Request: req.ID, Verdict: approval.Approve, By: "mallory"}, Key: pub, Sig: "AAAA", Fingerprint: "x"},
	}
	small := *req // signed over a copy of the request without its diff: the key is the forgery
	small.Diff = ""
	s := signed(approval.Sign(mallory, &small, approval.Decision{Verdict: approval.Approve, By: "mallory"}))
	forged = append(forged, s)
	start := time.Now()
	const n = 100
	for i := range n {
		if _, err := g.ResolveSigned(forged[i%len(forged)], "test"); !errors.Is(err, approval.ErrUnverified) {
			t.Fatalf("forged decision %d: %v", i, err)
		}
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("%d forged decisions took %v to refuse", n, took)
	}
}
