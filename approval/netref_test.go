package approval_test

import (
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
)

// Issue 32: a network grant and a denial are for what the reviewer saw,
// the command line, its directory and what the run reaches (the operator's
// --run-allow-host pairs): the same line from another directory, or with
// another reach, is another request, asked again; only the same three are
// one request, and a denied one is denied again at once, in the session
// and after a restart (a new gate on the same ledger).
func TestNetworkRequestIsForLineDirectoryAndReach(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{})
	ask := func(g *approval.Gate, dir string, reach ...string) *approval.Ticket {
		t.Helper()
		tk, err := g.Submit(&approval.Request{Kind: approval.KindNetwork, Worker: "w", Command: "sh build.sh", Dir: dir, Reach: reach}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	first := ask(g, "app", "127.0.0.1:5000")
	if same := ask(g, "app", "127.0.0.1:5000"); same != first {
		t.Errorf("the same line, directory and reach asked twice made two requests")
	}
	for _, other := range []*approval.Ticket{ask(g, "evil"), ask(g, "app"), ask(g, "app", "127.0.0.1:5001")} {
		if other == first {
			t.Errorf("%q in %q reaching %q was taken for the first request", other.Request().Command, other.Request().Dir, other.Request().Reach)
		}
	}
	if _, err := g.Resolve(approval.Decision{Request: first.Request().ID, Verdict: approval.Reject, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wait(t, first); !errors.Is(err, approval.ErrNetworkDenied) {
		t.Fatalf("denied: %v", err)
	}
	pendingAfter := func(g *approval.Gate, tk *approval.Ticket, want bool, what string) {
		t.Helper()
		select {
		case <-tk.Done():
			if want {
				_, _, err := wait(t, tk)
				t.Errorf("%s was answered at once (%v); it must be asked", what, err)
			}
		default:
			if !want {
				t.Errorf("%s was asked again; the same request was denied", what)
			}
		}
	}
	pendingAfter(g, ask(g, "app", "127.0.0.1:5000"), false, "the denied line, directory and reach")
	pendingAfter(g, ask(g, "tools", "127.0.0.1:5000"), true, "the denied line from another directory")

	// A restart: the denial holds from the ledger for the same three, and
	// not once the operator's allow list changed.
	g2 := approval.NewGate(l, approval.Policy{})
	pendingAfter(g2, ask(g2, "app", "127.0.0.1:5000"), false, "after a restart, the denied line, directory and reach")
	pendingAfter(g2, ask(g2, "app", "127.0.0.1:5000", "10.1.2.3:443"), true, "after a restart with another --run-allow-host, the denied line and directory")
}
