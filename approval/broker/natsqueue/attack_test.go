package natsqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// TestOtherDecisionSaidSafely: a reviewer whose decision finds another
// in its place is told whose and what, the queue's strings sanitised (a
// verdict, as a reviewer, may carry escape sequences into the terminal),
// and nothing of theirs is recorded.
func TestOtherDecisionSaidSafely(t *testing.T) {
	f := newFleet(t)
	a := f.server("writer-a")
	r, _ := f.reviewer("alice")
	tk, in := a.ask(t, r, requestFor("writer-a"))
	id := tk.Request().ID
	js, err := jetstream.New(f.conn())
	if err != nil {
		t.Fatal(err)
	}
	decs, err := js.KeyValue(context.Background(), "airlock_reviews_decisions")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"nonce": "n", "signed": approval.SignedDecision{
		Decision: approval.Decision{Request: id, By: "mallory\x1b[2J", Verdict: approval.Verdict("approve\x1b]0;pwned\x07")}}})
	// Its outcome says applied, so that no server refuses it first.
	if _, err := bucket(t, f, "airlock_reviews_outcomes").Put(context.Background(), id+".n", []byte(`{"state":"applied","server":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := decs.Put(context.Background(), id, b); err != nil {
		t.Fatal(err)
	}
	_, err = in.Decide(approval.Decision{Verdict: approval.Reject, Reason: "no"})
	if err == nil {
		t.Fatal("the decision was taken over another's")
	}
	if strings.ContainsAny(err.Error(), "\x1b\x07") {
		t.Fatalf("the error carries the queue's escape sequences: %q", err.Error())
	}
	if !strings.Contains(err.Error(), "mallory") {
		t.Fatalf("the error does not say whose decision is there: %q", err.Error())
	}
	if n := len(decisions(t, a.ledger)); n != 0 {
		t.Fatalf("ledger holds %d decisions, want none", n)
	}
}

// TestForgedDecisionsFromTheQueueRefused: whoever can write the decisions
// bucket (NATS without auth, a stolen server credential) cannot decide a
// push: an unsigned "approve by mallory", one signed by a key the server
// does not trust, and one signed by the trusted reviewer's key over
// another request are each refused, recorded in the ledger as refused,
// and the request stays pending and offered; the reviewer's own decision
// then goes through.
func TestForgedDecisionsFromTheQueueRefused(t *testing.T) {
	f := newFleet(t)
	a := f.server("writer-a")
	r, _ := f.reviewer("alice")
	tk, in := a.ask(t, r, requestFor("writer-a"))
	id := tk.Request().ID
	ctx := context.Background()
	decs := bucket(t, f, "airlock_reviews_decisions")
	outs := bucket(t, f, "airlock_reviews_outcomes")
	mallory, _ := nkeys.CreateUser()
	other := *in.Request
	other.Diff += "+a line the reviewer never saw\n"
	forged := map[string]approval.SignedDecision{
		"unsigned": {Decision: approval.Decision{Request: id, Verdict: approval.Approve, By: "mallory"}},
	}
	var err error
	if forged["untrusted"], err = approval.Sign(mallory, in.Request, approval.Decision{Verdict: approval.Approve, By: "mallory"}); err != nil {
		t.Fatal(err)
	}
	if forged["other request"], err = approval.Sign(approvaltest.ReviewerKey(), &other, approval.Decision{Verdict: approval.Approve, By: "mallory"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, s := range forged {
		n++
		nonce := fmt.Sprintf("forged%d", n)
		if _, err := decs.Put(ctx, id, mustJSON(map[string]any{"nonce": nonce, "signed": s})); err != nil {
			t.Fatal(err)
		}
		var out struct{ State, Error string }
		eventually(t, "the server's outcome of the "+name+" decision", func() bool {
			e, err := outs.Get(ctx, id+"."+nonce)
			return err == nil && json.Unmarshal(e.Value(), &out) == nil && out.State != "applying"
		})
		if out.State != "refused" || !strings.Contains(out.Error, "not signed by a reviewer this server trusts") {
			t.Fatalf("the %s decision: %+v", name, out)
		}
	}
	select {
	case <-tk.Done():
		t.Fatal("a forged decision decided the push")
	default:
	}
	in = waitFor(t, r, id) // offered again: refused decisions hold nothing
	if !strings.Contains(a.warn.String(), "refused and recorded in the ledger") {
		t.Errorf("the server did not warn of the forgeries: %q", a.warn.String())
	}
	recs, err := a.ledger.Records()
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, rec := range recs {
		switch rec.Kind {
		case ledger.KindRefused:
			refused++
		case ledger.KindDecision:
			t.Fatalf("the ledger holds a decision: %s", rec.Data)
		}
	}
	if refused != len(forged) {
		t.Fatalf("the ledger holds %d refused decisions, want %d", refused, len(forged))
	}
	d, err := in.Decide(approval.Decision{Verdict: approval.Approve})
	if err != nil || d.By != "alice" || d.Key != approvaltest.ReviewerKeys[0] {
		t.Fatalf("the reviewer's decision: %+v %v", d, err)
	}
	if _, g, err := wait(t, tk); err != nil || !g.Valid() {
		t.Fatalf("after the reviewer's approval: %v", err)
	}
}
