package broker_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// Two servers may offer the same request id (each gate mints its own, and
// a resumed session offers its old one again): the reviewer holds both,
// a decision reaches only the server it was made for, and the other's
// "settled" takes down only its own request.
func TestBrokerSameIDFromTwoServers(t *testing.T) {
	dir := socketDir(t)
	la, lb := filepath.Join(t.TempDir(), "a.jsonl"), filepath.Join(t.TempDir(), "b.jsonl")
	a := newServer(t, dir, la, "writer-a")
	b := newServer(t, dir, lb, "writer-b")
	const id = "req-000000000001"
	ta, err := a.gate.Resubmit(requestFor("writer-a"), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.gate.Resubmit(requestFor("writer-b"), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := watch(t, dir)
	eventually(t, "both requests of the same id are open", func() bool { return len(r.Pending()) == 2 })
	var inA, inB *broker.Incoming
	for _, in := range r.Pending() {
		switch in.Server.Worker {
		case "writer-a":
			inA = in
		case "writer-b":
			inB = in
		}
	}
	if inA == nil || inB == nil || inA.Request.ID != id || inB.Request.ID != id {
		t.Fatalf("open: %+v %+v", inA, inB)
	}
	// B is rejected first; A stays open, on the reviewer and at its gate.
	if _, err := inB.Decide(approval.Decision{Verdict: approval.Reject, Reason: "b's turn is over"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wait(t, tb); !errors.Is(err, approval.ErrRejected) {
		t.Fatalf("B: %v", err)
	}
	select {
	case <-inA.Gone():
		t.Fatalf("A went away with B: %s", inA.Why())
	case <-time.After(300 * time.Millisecond):
	}
	if p := r.Pending(); len(p) != 1 || p[0] != inA {
		t.Fatalf("open after B's decision: %v", p)
	}
	if len(a.gate.Pending()) != 1 {
		t.Fatal("A's gate lost its request")
	}
	if _, err := inA.Decide(approval.Decision{Verdict: approval.Approve}); err != nil {
		t.Fatal(err)
	}
	if _, gr, err := wait(t, ta); err != nil || !gr.Valid() {
		t.Fatalf("A: %v", err)
	}
	for path, want := range map[string]string{la: "approve", lb: "reject"} {
		recs, err := ledger.Records(path)
		if err != nil {
			t.Fatal(err)
		}
		var decisions []string
		for _, rec := range recs {
			if rec.Kind == ledger.KindDecision {
				decisions = append(decisions, string(rec.Data))
			}
		}
		if len(decisions) != 1 || !strings.Contains(decisions[0], `"`+want+`"`) {
			t.Errorf("%s: decisions %q, want one %s", filepath.Base(path), decisions, want)
		}
	}
}

// Grouped lists servers, sessions and repositories in the order of their
// oldest request; two servers of one pid stay two groups.
func TestGrouped(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, filepath.Join(t.TempDir(), "a.jsonl"), "writer-a")
	b := newServer(t, dir, filepath.Join(t.TempDir(), "b.jsonl"), "writer-b")
	// One clock for both gates, each reading later than the last: the
	// requests' times order them as they were made.
	var clock approvaltest.Clock
	a.gate.SetClock(clock.Now)
	b.gate.SetClock(clock.Now)
	submit := func(s *server, session, repo, branch string) {
		t.Helper()
		req := requestFor(s.broker.Path())
		req.Session, req.Repo, req.Ref = session, repo, "refs/heads/"+branch
		if _, err := s.gate.Submit(req, nil); err != nil {
			t.Fatal(err)
		}
	}
	submit(b, "s1", "", "b1")
	submit(a, "s2", "web", "a1")
	submit(a, "s3", "", "a2")
	submit(a, "s2", "api", "a3")
	submit(b, "s1", "", "b2")
	submit(a, "s2", "web", "a4")
	r := watch(t, dir)
	eventually(t, "all requests are open", func() bool { return len(r.Pending()) == 6 })
	var got []string
	for _, srv := range broker.Grouped(r.Pending()) {
		for _, sess := range srv.Sessions {
			for _, repo := range sess.Repos {
				var branches []string
				for _, in := range repo.Requests {
					branches = append(branches, approval.ShortRef(in.Request.Ref))
				}
				got = append(got, srv.Server.Worker+"/"+sess.Session+"/"+repo.Repo+": "+strings.Join(branches, " "))
			}
		}
	}
	want := []string{"writer-b/s1/: b1 b2", "writer-a/s2/web: a1 a4", "writer-a/s2/api: a3", "writer-a/s3/: a2"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
