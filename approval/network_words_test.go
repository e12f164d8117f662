package approval_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
)

// Issue 24: a denied network request told the worker "push rejected" and,
// asked again, to "change it before pushing again". A run's worker is told
// the network was denied, and what to do instead; a push keeps its words.
func TestNetworkDenialIsWordedForARun(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		want         []string
	}{
		{"with a reason", "no downloads today", []string{"network access denied by the reviewer: no downloads today", "without network: true"}},
		{"without a reason", "", []string{"network access denied by the reviewer (no reason given)", "without network: true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
			ask := func() *approval.Ticket {
				tk, err := g.Submit(&approval.Request{Kind: approval.KindNetwork, Worker: "w", Command: "npm install", Reason: "deps"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				return tk
			}
			tk := ask()
			if _, err := g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Reject, Reason: tc.reason}); err != nil {
				t.Fatal(err)
			}
			_, _, err := wait(t, tk)
			check := func(what string, err error, want ...string) {
				t.Helper()
				if !errors.Is(err, approval.ErrNetworkDenied) || !errors.Is(err, approval.ErrRejected) {
					t.Errorf("%s: %v is not a network denial (and a rejection)", what, err)
				}
				msg := err.Error()
				for _, w := range want {
					if !strings.Contains(msg, w) {
						t.Errorf("%s: %q does not say %q", what, msg, w)
					}
				}
				for _, bad := range []string{"push", "pushing"} {
					if strings.Contains(msg, bad) {
						t.Errorf("%s: %q speaks of a push", what, msg)
					}
				}
			}
			check("denied", err, tc.want...)
			// Asked again: denied at once, and said so.
			_, _, err = wait(t, ask())
			again := []string{"already denied the network to this same command", "denied again at once", "without network: true"}
			if tc.reason != "" {
				again = append(again, `"`+tc.reason+`"`)
			}
			check("asked again", err, again...)
		})
	}
}

// A push's rejection keeps its words.
func TestPushRejectionWordsUnchanged(t *testing.T) {
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
	tk, err := g.Submit(approvaltest.SampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Reject, Reason: "wrong file"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wait(t, tk); !errors.Is(err, approval.ErrRejected) || errors.Is(err, approval.ErrNetworkDenied) || err.Error() != "push rejected: wrong file" {
		t.Errorf("a push's rejection: %v", err)
	}
}

// A network request withdrawn is worded as one to its worker, not as a
// "push request withdrawn"; a push's keeps its words.
func TestWithdrawalIsWordedForItsKind(t *testing.T) {
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
	for _, tc := range []struct {
		req  *approval.Request
		want string
	}{
		{&approval.Request{Kind: approval.KindNetwork, Worker: "w", Command: "npm install"}, "network request withdrawn: gone"},
		{approvaltest.SampleRequest(), "push request withdrawn: gone"},
	} {
		tk, err := g.Submit(tc.req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Withdraw(tk.Request().ID, "gone"); err != nil {
			t.Fatal(err)
		}
		_, _, err = wait(t, tk)
		if !errors.Is(err, approval.ErrWithdrawn) || err.Error() != tc.want {
			t.Errorf("withdrawn: %v, want %q (and ErrWithdrawn)", err, tc.want)
		}
	}
}
