package natsqueue_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/broker/natsqueue"
)

// Whatever else writes to the queue (a broken client, someone with its
// credentials) is refused or ignored with a message that says what was
// wrong, and changes nothing: the reviewer is offered only real requests,
// the gate decides only what a reviewer decided of what it saw, and a
// real decision still goes through.
func TestHostileEntriesChangeNothing(t *testing.T) {
	f := newFleet(t)
	a := f.server("writer-a")
	r, rwarn := f.reviewer("alice")
	tk, _ := a.ask(t, r, requestFor("writer-a"))
	id := tk.Request().ID

	ctx := context.Background()
	js, err := jetstream.New(f.conn())
	if err != nil {
		t.Fatal(err)
	}
	offers, err := js.KeyValue(ctx, "airlock_reviews")
	if err != nil {
		t.Fatal(err)
	}
	decs, err := js.KeyValue(ctx, "airlock_reviews_decisions")
	if err != nil {
		t.Fatal(err)
	}
	bodies := bodiesStore(t, f)
	put := func(kv jetstream.KeyValue, key string, v any) {
		t.Helper()
		b, ok := v.([]byte)
		if !ok {
			b, _ = json.Marshal(v)
		}
		if _, err := kv.Put(ctx, key, b); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	evil := broker.ServerInfo{Name: "evil\x1b[31m", Host: "h", Worker: "w"}
	body := func(name string, req any) {
		t.Helper()
		b, _ := json.Marshal(req)
		if _, err := bodies.PutBytes(ctx, name, b); err != nil {
			t.Fatal(err)
		}
	}
	other := requestFor("other")
	other.ID = "req-other"
	body("req-big.evil", strings.Repeat("x", 2<<20))
	body("req-liar.evil", other)

	put(offers, "open.req-garbage", []byte("{not json"))
	if _, err := offers.Put(ctx, "open.req-huge", make([]byte, 300<<10)); err == nil {
		t.Error("the queue took a 300 KiB entry")
	}
	put(offers, "open.req-noserver", map[string]any{"server": map[string]any{"pid": 1}, "body": "req-noserver.", "size": 10})
	put(offers, "open.req-nobody", map[string]any{"server": map[string]any{"name": "evil"}, "body": "req-nobody.evil", "size": 10})
	put(offers, "open.req-big", map[string]any{"server": evil, "body": "req-big.evil", "size": 10})
	put(offers, "open.req-big", map[string]any{"server": map[string]any{"name": "evil"}, "body": "req-big.evil", "size": 10})
	put(offers, "open.req-liar", map[string]any{"server": map[string]any{"name": "evil"}, "body": "req-liar.evil", "size": len(mustJSON(other))})
	put(offers, "open.req-oversize", map[string]any{"server": map[string]any{"name": "evil"}, "body": "req-oversize.evil", "size": natsqueue.MaxBody + 1})
	put(offers, "strange", []byte("{}"))
	put(offers, "open.req-inline", map[string]any{"server": map[string]any{"name": "evil"}, "request": other, "size": 3})

	// Decisions: garbage for the real request, one naming another
	// request under its key, one for a request nobody has pending.
	put(decs, id, []byte("garbage"))
	put(decs, "req-nobody", map[string]any{"nonce": "n", "signed": approval.SignedDecision{
		Decision: approval.Decision{Request: "req-nobody", Verdict: approval.Approve, By: "mallory"}}})

	want := map[*syncBuffer][]string{
		rwarn: {"req-garbage ignored: not an offer", "req-noserver ignored: it names no server",
			"req-nobody of server evil ignored: its body req-nobody.evil", "req-big of server evil ignored: its body is 2097154 bytes, the entry says 10",
			"req-liar of server evil ignored: its body is request \"req-other\"", "req-oversize ignored: its body's size 67108865",
			`entry "strange" ignored`, "req-inline ignored: it holds a request of", "a decision of " + id + " ignored: not a decision"},
		a.warn: {"a decision of " + id + " ignored: not a decision"},
	}
	for buf, lines := range want {
		for _, line := range lines {
			eventually(t, "the warning "+line, func() bool { return strings.Contains(buf.String(), line) })
		}
	}
	if strings.Contains(rwarn.String(), "\x1b") {
		t.Errorf("a warning carries the queue's escape sequence: %q", rwarn.String())
	}
	time.Sleep(200 * time.Millisecond) // anything wrongly taken would show by now
	if p := r.Pending(); len(p) != 1 || p[0].Request.ID != id {
		t.Fatalf("the reviewer is offered %d requests, want only %s", len(p), id)
	}
	if len(a.gate.Pending()) != 1 || len(decisions(t, a.ledger)) != 0 {
		t.Fatal("hostile entries decided something")
	}
	if e, err := decs.Get(ctx, "req-nobody"); err != nil || !strings.Contains(string(e.Value()), `"by":"mallory"`) {
		t.Errorf("a decision of a request no server has was touched: %v", err)
	}
	if _, err := bucket(t, f, "airlock_reviews_outcomes").Get(ctx, "req-nobody.n"); err == nil {
		t.Error("a server wrote an outcome of a decision of a request no server has")
	}

	// A decision naming another request under this one's key decides
	// nothing; the real reviewer's decision, over the garbage, does.
	put(decs, id, map[string]any{"nonce": "n", "signed": approval.SignedDecision{
		Decision: approval.Decision{Request: "req-other", Verdict: approval.Approve, By: "mallory"}}})
	eventually(t, "the misnamed decision is refused", func() bool { return strings.Contains(a.warn.String(), `names request "req-other"`) })
	in := incoming(r, id)
	if in == nil {
		t.Fatal("the real request left the reviewer")
	}
	if _, err := in.Decide(approval.Decision{Verdict: approval.Reject, Reason: "checked"}); err != nil {
		t.Fatal(err)
	}
	if d, _, err := wait(t, tk); err == nil || d.By != "alice" {
		t.Fatalf("the real decision: %+v %v", d, err)
	}
	if n := len(decisions(t, a.ledger)); n != 1 {
		t.Fatalf("ledger holds %d decisions, want the reviewer's one", n)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// A request the queue cannot carry (an id no gate makes, as Resubmit
// would take from a damaged journal) is not offered, is warned of once
// however often the publisher checks the gate, and leaves the others
// alone.
func TestUnfitRequestWarnedOnce(t *testing.T) {
	t.Cleanup(natsqueue.SetResync(20 * time.Millisecond)) // after the servers and reviewers close
	f := newFleet(t)
	a := f.server("writer-a")
	r, _ := f.reviewer("alice")
	if _, err := a.gate.Resubmit(requestFor("odd"), "req-not a key!", nil); err != nil {
		t.Fatal(err)
	}
	tk, _ := a.ask(t, r, requestFor("writer-a"))
	time.Sleep(300 * time.Millisecond) // many checks of the gate
	if n := strings.Count(a.warn.String(), `request "req-not a key!" not offered to the fleet: its id is not one a gate makes`); n != 1 {
		t.Fatalf("warned %d times:\n%s", n, a.warn.String())
	}
	if p := r.Pending(); len(p) != 1 || p[0].Request.ID != tk.Request().ID {
		t.Fatalf("pending: %v", p)
	}
}
