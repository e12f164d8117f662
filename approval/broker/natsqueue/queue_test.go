package natsqueue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/broker/natsqueue"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
)

// A request goes to a reviewer on another connection with its server's
// name and host; the reviewer's approval comes back as the gate recorded
// it, by the reviewer's name, and grants the push; a withdrawn request
// leaves the reviewer with why; a decision the gate refuses comes back as
// its error and leaves the request open for another.
func TestOfferedDecidedWithdrawn(t *testing.T) {
	f := newFleet(t)
	a := f.server("writer-a")
	r, _ := f.reviewer("alice on laptop")

	tk, in := a.ask(t, r, requestFor("writer-a"))
	id := tk.Request().ID
	if in.Server.Worker != "writer-a" || in.Server.Name != a.pub.Info().Name || in.Server.Host == "" || in.Request.Diff == "" {
		t.Fatalf("incoming %+v from %+v", in.Request, in.Server)
	}
	if len(r.Servers()) != 1 {
		t.Errorf("servers %+v, want a's", r.Servers())
	}

	// Refused by the gate: files cannot be picked (no pick channel).
	if _, err := in.Decide(approval.Decision{Verdict: approval.Pick, Paths: []string{"report.md"}}); err == nil || !strings.Contains(err.Error(), "cannot be picked") {
		t.Fatalf("a pick of an unpickable push: %v", err)
	}
	in = waitFor(t, r, id) // open again, for another decision
	d, err := in.Decide(approval.Decision{Verdict: approval.Approve})
	if err != nil || d.Verdict != approval.Approve || d.By != "alice on laptop" || d.New != tk.Request().New {
		t.Fatalf("decide: %+v %v", d, err)
	}
	if _, g, err := wait(t, tk); err != nil || !g.Valid() {
		t.Fatalf("after approval: %v", err)
	}
	<-in.Gone()
	if recs := decisions(t, a.ledger); len(recs) != 1 || !strings.Contains(string(recs[0].Data), `"by":"alice on laptop"`) {
		t.Fatalf("ledger decisions: %v", recs)
	}

	tw, inW := a.ask(t, r, requestFor("writer-a-2"))
	if err := a.gate.Withdraw(tw.Request().ID, "discarded"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inW.Gone():
	case <-time.After(5 * time.Second):
		t.Fatal("the withdrawn request stays on the reviewer")
	}
	if !strings.Contains(inW.Why(), "withdrawn") {
		t.Errorf("why: %q", inW.Why())
	}
	if len(r.Pending()) != 0 {
		t.Errorf("pending after all: %v", r.Pending())
	}
}

// Two reviewers decide one request at once: one decision wins, the other
// is told who decided, and the ledger holds one decision.
func TestTwoReviewersRace(t *testing.T) {
	f := newFleet(t)
	a := f.server("writer-a")
	r1, _ := f.reviewer("alice")
	r2, _ := f.reviewer("bob")
	for round := range 5 {
		tk, err := a.gate.Submit(requestFor("writer-"+string(rune('a'+round))), nil)
		if err != nil {
			t.Fatal(err)
		}
		id := tk.Request().ID
		ins := []*broker.Incoming{waitFor(t, r1, id), waitFor(t, r2, id)}
		verdicts := []approval.Verdict{approval.Approve, approval.Reject}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = ins[i].Decide(approval.Decision{Verdict: verdicts[i], Reason: "no"})
			}()
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, natsqueue.ErrAlreadyDecided):
				other := []string{"bob", "alice"}[i]
				if !strings.Contains(err.Error(), "by "+other) {
					t.Errorf("the loser is told %q, want the winner %s named", err, other)
				}
			default:
				t.Errorf("reviewer %d: %v", i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d decisions won (%v)", round, won, errs)
		}
		wait(t, tk)
	}
	if n := len(decisions(t, a.ledger)); n != 5 {
		t.Fatalf("ledger holds %d decisions for 5 requests", n)
	}
}

// A decision made while the request's server is down waits in the queue,
// and the server that offers the request again under its id (a resumed
// session) applies it: the push is decided and the ledger records the
// decision, by the reviewer.
func TestDecisionReachesARestartedServer(t *testing.T) {
	f := newFleet(t)
	a := f.server("writer-a")
	r, _ := f.reviewer("alice")
	tk, in := a.ask(t, r, requestFor("writer-a"))
	id := tk.Request().ID
	if err := a.pub.Close(); err != nil { // the server stops; its request stays in the queue
		t.Fatal(err)
	}
	eventually(t, "the stopped server leaves the reviewer's servers", func() bool { return len(r.Servers()) == 0 })
	if incoming(r, id) == nil {
		t.Fatal("the stopped server's request left the reviewer")
	}
	d, err := in.Decide(approval.Decision{Verdict: approval.Approve})
	if !errors.Is(err, broker.ErrQueued) || d.Verdict != approval.Approve {
		t.Fatalf("decision with the server down: %+v %v", d, err)
	}
	if len(decisions(t, a.ledger)) != 0 {
		t.Fatal("a decision reached the ledger of a server that was down")
	}
	// Restarted (a new gate on the same ledger, as a resumed server has),
	// the session offers the request again under its id.
	b := f.serverOn(a.ledger, "writer-a")
	tb, err := b.gate.Resubmit(requestFor("writer-a"), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, g, err := wait(t, tb)
	if err != nil || !g.Valid() || got.By != "alice" {
		t.Fatalf("the resumed request: %+v %v", got, err)
	}
	recs := decisions(t, b.ledger)
	if len(recs) != 1 || !strings.Contains(string(recs[0].Data), id) || !strings.Contains(string(recs[0].Data), `"by":"alice"`) {
		t.Fatalf("ledger decisions: %v", recs)
	}
	eventually(t, "the decided request leaves the reviewer", func() bool { return incoming(r, id) == nil })
}

// A decision of what the reviewer saw does not cover a request offered
// again under the same id with other changes: it is refused, nothing is
// decided, and the new request is open for a decision.
func TestDecisionOfOtherChangesIsRefused(t *testing.T) {
	f := newFleet(t)
	a := f.server("writer-a")
	r, _ := f.reviewer("alice")
	tk, in := a.ask(t, r, requestFor("writer-a"))
	id := tk.Request().ID
	_ = a.pub.Close()
	if _, err := in.Decide(approval.Decision{Verdict: approval.Approve}); !errors.Is(err, broker.ErrQueued) {
		t.Fatal(err)
	}
	b := f.server("writer-a")
	changed := requestFor("writer-a")
	changed.Diff += "+a line nobody saw\n"
	tb, err := b.gate.Resubmit(changed, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	in2 := waitFor(t, r, id)
	if in2.Request.Diff != changed.Diff {
		t.Fatalf("the reviewer has the old request: %q", in2.Request.Diff)
	}
	select {
	case <-tb.Done():
		t.Fatal("a decision of other changes decided the request")
	case <-time.After(300 * time.Millisecond):
	}
	if len(decisions(t, b.ledger)) != 0 {
		t.Fatal("the ledger has a decision nobody made of these changes")
	}
	if _, err := in2.Decide(approval.Decision{Verdict: approval.Reject, Reason: "seen now"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wait(t, tb); !errors.Is(err, approval.ErrRejected) {
		t.Fatalf("after the new decision: %v", err)
	}
}

// A request larger than an entry holds (a big diff) goes through the
// bodies store whole, and its body goes with it.
func TestLargeRequestThroughTheBodiesStore(t *testing.T) {
	f := newFleet(t)
	a := f.server("writer-a")
	r, _ := f.reviewer("alice")
	req := requestFor("writer-a")
	req.Diff = strings.Repeat("+a line of a large change\n", 100_000) // 2.6 MB: chunked
	tk, in := a.ask(t, r, req)
	if in.Request.Diff != req.Diff {
		t.Fatalf("the reviewer has %d bytes of diff, want %d", len(in.Request.Diff), len(req.Diff))
	}
	name := tk.Request().ID + "." + a.pub.Info().Name
	bodies := bodiesStore(t, f)
	if _, err := bodies.GetInfo(context.Background(), name); err != nil {
		t.Fatalf("the body %s: %v", name, err)
	}
	if err := a.gate.Withdraw(tk.Request().ID, "done"); err != nil {
		t.Fatal(err)
	}
	<-in.Gone()
	eventually(t, "the body goes with its request", func() bool {
		_, err := bodies.GetInfo(context.Background(), name)
		return errors.Is(err, jetstream.ErrObjectNotFound)
	})
}

// A decision a server took (applying) and never finished, because it was
// killed before its gate recorded it, is applied by the server that has
// the request now; one a running server holds is left to it.
func TestDecisionOfAKilledServerIsTakenOver(t *testing.T) {
	f := newFleet(t)
	a := f.server("writer-a")
	r, _ := f.reviewer("alice")
	req := requestFor("writer-a")
	tk, in := a.ask(t, r, req)
	id := tk.Request().ID
	ctx := context.Background()
	js, err := jetstream.New(f.conn())
	if err != nil {
		t.Fatal(err)
	}
	offers, _ := js.KeyValue(ctx, "airlock_reviews")
	decs, _ := js.KeyValue(ctx, "airlock_reviews_decisions")
	outs, _ := js.KeyValue(ctx, "airlock_reviews_outcomes")
	if _, err := offers.Put(ctx, "server.alive", mustJSON(broker.ServerInfo{Name: "alive"})); err != nil {
		t.Fatal(err)
	}
	signed, err := approval.Sign(approvaltest.ReviewerKey(), in.Request, approval.Decision{Verdict: approval.Approve, By: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	taken := func(server string) []byte {
		return mustJSON(map[string]any{"state": "applying", "server": server})
	}
	if _, err := outs.Put(ctx, id+".n1", taken("alive")); err != nil {
		t.Fatal(err)
	}
	if _, err := decs.Put(ctx, id, mustJSON(map[string]any{"nonce": "n1", "signed": signed})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tk.Done():
		t.Fatal("a decision a running server holds was taken from it")
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := outs.Put(ctx, id+".n1", taken("killed")); err != nil {
		t.Fatal(err)
	}
	if d, g, err := wait(t, tk); err != nil || !g.Valid() || d.By != "bob" {
		t.Fatalf("the killed server's decision: %+v %v", d, err)
	}
	if n := len(decisions(t, a.ledger)); n != 1 {
		t.Fatalf("ledger holds %d decisions", n)
	}
}
