package natsqueue_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
)

// A decision written to the queue for a request its server's ledger has
// decided already (a reviewer answering a stale offer: the request was
// decided on the socket meanwhile) is refused as already decided, naming
// the first decision, and nothing is recorded.
func TestStaleQueueDecisionIsRefused(t *testing.T) {
	f := newFleet(t)
	s := f.server("stale")
	r, _ := f.reviewer("queue reviewer")
	tk, _ := s.ask(t, r, requestFor("stale"))
	id := tk.Request().ID
	if _, err := s.gate.Resolve(approval.Decision{Request: id, Verdict: approval.Approve, By: "socket reviewer"}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(f.conn())
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), "airlock_reviews_decisions")
	if err != nil {
		t.Fatal(err)
	}
	stale, _ := json.Marshal(map[string]any{"nonce": "n1", "by": "late reviewer", "fingerprint": "x", "state": "decided",
		"decision": approval.Decision{Request: id, Verdict: approval.Reject, Reason: "stale"}})
	if _, err := kv.Put(context.Background(), id, stale); err != nil {
		t.Fatal(err)
	}
	var got struct{ State, Error string }
	eventually(t, "the stale decision refused", func() bool {
		e, err := kv.Get(context.Background(), id)
		return err == nil && json.Unmarshal(e.Value(), &got) == nil && got.State == "refused"
	})
	if !strings.Contains(got.Error, "already decided: approve by socket reviewer at ") {
		t.Fatalf("the stale decision was refused with %q", got.Error)
	}
	if n := len(decisions(t, s.ledger)); n != 1 {
		t.Fatalf("the ledger holds %d decisions", n)
	}
}
