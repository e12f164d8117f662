package natsqueue_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
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
	b, _ := json.Marshal(map[string]any{"nonce": "n", "by": "mallory\x1b[2J", "fingerprint": "f", "state": "applied",
		"decision": approval.Decision{Request: id, Verdict: approval.Verdict("approve\x1b]0;pwned\x07")}})
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
