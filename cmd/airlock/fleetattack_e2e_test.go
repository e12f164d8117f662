//go:build unix

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// TestFleetForgedDecisionsApproveNothing: with the fleet's NATS open to
// anyone (as its tests start it, --insecure-nats), a client that writes
// the decisions bucket tries, against a real airlock serve --store whose
// push waits: the decision entry that approved a push on the landed main
// ("approve by mallory", unsigned, with the fingerprint of what was
// offered), the same decision unsigned in today's form, one signed by a
// key the server does not trust, and one signed by the reviewer's own key
// over another request. None approves: the push does not land, the
// server refuses each it can read and records it in the ledger (kind
// refused), no decision by mallory is in the ledger, and the request stays
// waiting for the reviewer.
func TestFleetForgedDecisionsApproveNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newQueueRig(t)
	d := f.serve(ctx, "--ephemeral")
	push := f.ask(d)
	js, err := jetstream.New(f.fleetConn(t))
	if err != nil {
		t.Fatal(err)
	}
	offers, err := js.KeyValue(ctx, "airlock_reviews")
	if err != nil {
		t.Fatal(err)
	}
	var req approval.Request
	for deadline := time.Now().Add(20 * time.Second); req.ID == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the push never reached the fleet's queue")
		}
		keys, err := offers.ListKeysFiltered(ctx, "open.>")
		if err != nil {
			continue
		}
		for k := range keys.Keys() {
			e, err := offers.Get(ctx, k)
			var o struct{ Request json.RawMessage }
			if err == nil && json.Unmarshal(e.Value(), &o) == nil && len(o.Request) > 0 {
				_ = json.Unmarshal(o.Request, &req)
			}
		}
	}
	decs, err := js.KeyValue(ctx, "airlock_reviews_decisions")
	if err != nil {
		t.Fatal(err)
	}
	refusedN := func() int {
		n := 0
		for _, rec := range f.ledgerRecords(t) {
			var r struct{ Request string }
			if rec.Kind == ledger.KindRefused && json.Unmarshal(rec.Data, &r) == nil && r.Request == req.ID {
				n++
			}
		}
		return n
	}
	// Each entry replaces the one before under the request's key: the
	// next is written once the server has read this one (done), not after
	// a fixed pause a busy machine may outlast, which would leave an
	// attack untried.
	write := func(v any, done func() bool) {
		t.Helper()
		b, _ := json.Marshal(v)
		if _, err := decs.Put(ctx, req.ID, b); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(20 * time.Second); !done(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the server never read the entry %s:\n%s", b, d.stderr.String())
			}
		}
	}
	refusedAgain := func() func() bool {
		n := refusedN()
		return func() bool { return refusedN() > n }
	}
	// The landed main's entry, which its server applied: now ignored, as
	// it holds no signed decision.
	write(map[string]any{"nonce": "m0", "by": "mallory", "fingerprint": oldFingerprint(&req), "state": "decided",
		"decision": map[string]any{"request": req.ID, "verdict": "approve"}},
		func() bool { return strings.Contains(d.stderr.String(), "a decision of "+req.ID+" ignored") })
	mallory := approval.Decision{Request: req.ID, Verdict: approval.Approve, By: "mallory"}
	write(map[string]any{"nonce": "m1", "signed": approval.SignedDecision{Decision: mallory}}, refusedAgain())
	kp, _ := nkeys.CreateUser()
	untrusted, err := approval.Sign(kp, &req, mallory)
	if err != nil {
		t.Fatal(err)
	}
	write(map[string]any{"nonce": "m2", "signed": untrusted}, refusedAgain())
	other := req
	other.Diff += "+a line nobody saw\n"
	reviewer, err := reviewerKeyOf(t, f.reviewerRoot)
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := approval.Sign(reviewer, &other, mallory)
	if err != nil {
		t.Fatal(err)
	}
	write(map[string]any{"nonce": "m3", "signed": replayed}, refusedAgain())

	refused := map[string]bool{}
	for deadline := time.Now().Add(20 * time.Second); len(refused) < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the ledger records %d refused decisions, want 3:\n%s", len(refused), d.stderr.String())
		}
		for _, rec := range f.ledgerRecords(t) {
			var r struct{ Request, By, Fingerprint, Why string }
			switch {
			case rec.Kind == ledger.KindRefused && json.Unmarshal(rec.Data, &r) == nil && r.Request == req.ID && r.By == "mallory":
				refused[r.Fingerprint+r.Why] = true
			case rec.Kind == ledger.KindDecision:
				t.Fatalf("the ledger holds a decision: %s", rec.Data)
			}
		}
	}
	select {
	case r := <-push:
		t.Fatalf("the push returned on forged decisions: %+v", r)
	default:
	}
	if out, _ := gitOut(t, f.env, f.repo, "show", "agent:notes/fleet.md"); out != "" {
		t.Fatalf("a forged decision landed the push: %q", out)
	}
	mustContain(t, "the server's warnings", d.stderr.String(), "refused and recorded in the ledger")
	if strings.Contains(d.stderr.String(), "approve by mallory") {
		t.Fatal("the server says mallory approved")
	}
}

// oldFingerprint is the fingerprint the landed main's queue put in a
// decision: what it covered of the request, as it hashed it.
func oldFingerprint(r *approval.Request) string {
	b, _ := json.Marshal(struct {
		Kind, Target, Ref, Command, Diff string
		Old, New, Tree                   string
		NewRef, Truncated, Pickable      bool
		Commits                          []approval.CommitInfo
		Files                            []approval.FileChange
	}{r.Kind, r.Target, r.Ref, r.Command, r.Diff, r.Old.String(), r.New.String(), r.Tree.String(),
		r.NewRef, r.DiffTruncated, r.Pickable, r.Commits, r.Files})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
