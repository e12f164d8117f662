package natsqueue_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
)

// A decision written to the queue for a request its server's ledger has
// decided already (a reviewer answering a stale offer: the request was
// decided on the socket meanwhile) is refused as already decided, naming
// the first decision, and nothing is recorded.
func TestStaleQueueDecisionIsRefused(t *testing.T) {
	f := newFleet(t)
	s := f.server("stale")
	r, _ := f.reviewer("queue reviewer")
	tk, in := s.ask(t, r, requestFor("stale"))
	id := tk.Request().ID
	if _, err := s.gate.Resolve(approval.Decision{Request: id, Verdict: approval.Approve, By: "socket reviewer"}); err != nil {
		t.Fatal(err)
	}
	// Once the server has taken its offer down (it says "no longer
	// waiting" to a decision queued before that), only the ledger can
	// tell the late decision it is stale.
	offers := bucket(t, f, "airlock_reviews")
	eventually(t, "the decided request's offer taken down", func() bool {
		_, err := offers.Get(context.Background(), "open."+id)
		return err != nil
	})
	// The late reviewer's decision is genuine: signed by the trusted key
	// over what it was shown. It is stale all the same.
	signed, err := approval.Sign(approvaltest.ReviewerKey(), in.Request, approval.Decision{Request: id, Verdict: approval.Reject, Reason: "stale", By: "late reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	stale, _ := json.Marshal(map[string]any{"nonce": "n1", "signed": signed})
	if _, err := bucket(t, f, "airlock_reviews_decisions").Put(context.Background(), id, stale); err != nil {
		t.Fatal(err)
	}
	outs := bucket(t, f, "airlock_reviews_outcomes")
	var got struct{ State, Error string }
	eventually(t, "the stale decision refused", func() bool {
		e, err := outs.Get(context.Background(), id+".n1")
		return err == nil && json.Unmarshal(e.Value(), &got) == nil && got.State == "refused"
	})
	if !strings.Contains(got.Error, "already decided: approve by socket reviewer at ") {
		t.Fatalf("the stale decision was refused with %q", got.Error)
	}
	if n := len(decisions(t, s.ledger)); n != 1 {
		t.Fatalf("the ledger holds %d decisions", n)
	}
}
