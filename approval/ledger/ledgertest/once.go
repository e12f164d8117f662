package ledgertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// onceRequest is a push request the servers of these tests share.
func onceRequest(tag string) *approval.Request {
	h := func(s string) plumbing.Hash { return plumbing.ComputeHash(plumbing.BlobObject, []byte(tag+s)) }
	return &approval.Request{Worker: "w", Target: "local:/srv/" + tag, Ref: "refs/heads/main", Old: h("old"), New: h("new"), Tree: h("tree"),
		Files: []approval.FileChange{{Path: "a.txt"}}, Diff: "diff\n"}
}

// decisionsOf counts the decision records of request id in the store.
func decisionsOf(t *testing.T, l approval.Ledger, id string) (n int, verdicts []string) {
	t.Helper()
	recs, err := l.Records()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		var d struct{ Request, Verdict string }
		if r.Kind == ledger.KindDecision && json.Unmarshal(r.Data, &d) == nil && d.Request == id {
			n++
			verdicts = append(verdicts, d.Verdict)
		}
	}
	return n, verdicts
}

// One decision per request across servers that share the ledger: two
// gates that both have request id waiting (a session taken up by a second
// server while the first still ran) are answered; the first decision is
// recorded, the second is refused as already decided, nothing recorded;
// and a third gate started after offers it to nobody: Resubmit gives its
// ticket decided, appending nothing.
func testOneDecisionAcrossServers(t *testing.T, s Store) {
	la, lb := s.Open(t), s.Open(t)
	a := approval.NewGate(la, approval.Policy{})
	b := approval.NewGate(lb, approval.Policy{}) // started before any decision
	tk, err := a.Submit(onceRequest("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Request().ID
	if _, err := b.Resubmit(onceRequest("x"), id, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Resolve(approval.Decision{Request: id, Verdict: approval.Approve, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	_, err = b.Resolve(approval.Decision{Request: id, Verdict: approval.Reject, By: "bob"})
	if !errors.Is(err, approval.ErrAlreadyDecided) {
		t.Fatalf("a second decision of %s, at another server: %v; want ErrAlreadyDecided", id, err)
	}
	if n, v := decisionsOf(t, la, id); n != 1 || v[0] != "approve" {
		t.Fatalf("the ledger holds %d decisions of %s: %v", n, id, v)
	}
	head, _ := la.Head()
	c := approval.NewGate(s.Open(t), approval.Policy{})
	again, err := c.Resubmit(onceRequest("x"), id, nil)
	if err != nil || !again.Final() || len(c.Pending()) != 0 {
		t.Fatalf("a gate started after the decision offered %s again: final %v, pending %d, %v", id, again != nil && again.Final(), len(c.Pending()), err)
	}
	if dec, grant, err := again.Wait(t.Context()); err != nil || dec.By != "alice" || grant.New() != onceRequest("x").New {
		t.Fatalf("the decided ticket: %+v, %v", dec, err)
	}
	if now, _ := la.Head(); now.Hash != head.Hash {
		t.Fatalf("Resubmit of a decided request appended record %d (%s)", now.Seq, now.Kind)
	}
	if _, err := c.Resolve(approval.Decision{Request: id, Verdict: approval.Approve}); !errors.Is(err, approval.ErrAlreadyDecided) {
		t.Fatalf("a stale decision at the third gate: %v", err)
	}
}

// Two servers decide one request at the same moment: exactly one
// decision is recorded, and the other is told the request was decided.
func testOneDecisionRace(t *testing.T, s Store) {
	for round := range 4 {
		la, lb := s.Open(t), s.Open(t)
		a, b := approval.NewGate(la, approval.Policy{}), approval.NewGate(lb, approval.Policy{})
		tk, err := a.Submit(onceRequest(fmt.Sprint("race", round)), nil)
		if err != nil {
			t.Fatal(err)
		}
		id := tk.Request().ID
		if _, err := b.Resubmit(onceRequest(fmt.Sprint("race", round)), id, nil); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, g := range []*approval.Gate{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = g.Resolve(approval.Decision{Request: id, Verdict: approval.Approve, By: fmt.Sprint("reviewer", i)})
			}()
		}
		wg.Wait()
		refused := 0
		for _, err := range errs {
			switch {
			case errors.Is(err, approval.ErrAlreadyDecided):
				refused++
			case err != nil:
				t.Fatal(err)
			}
		}
		if n, v := decisionsOf(t, la, id); n != 1 || refused != 1 {
			t.Fatalf("round %d: %d decisions recorded %v, %d refused; want one of each", round, n, v, refused)
		}
	}
}
