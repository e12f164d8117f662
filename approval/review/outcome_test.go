package review

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
)

// The line after a decision says what it did, in the request's own terms:
// a network request is allowed or denied, never pushed.
func TestOutcomeWording(t *testing.T) {
	push := &approval.Request{}
	network := &approval.Request{Kind: approval.KindNetwork}
	comments := []approval.Comment{{Path: "a.go", Line: 3, Text: "x"}, {Text: "y"}}
	id := plumbing.NewHash("1234567890123456789012345678901234567890")
	for _, tc := range []struct {
		r    *approval.Request
		d    approval.Decision
		want string
	}{
		{network, approval.Decision{Verdict: approval.Reject, Reason: "no"}, `  Denied; the command runs without the network, and the worker is told why: "no".`},
		{network, approval.Decision{Verdict: approval.Approve}, "  Allowed; the run goes ahead with the network."},
		{push, approval.Decision{Verdict: approval.Reject, Reason: "later", Comments: comments}, `  Asked for changes; nothing is pushed, and the worker gets your 2 comments and your reason, "later".`},
		{push, approval.Decision{Verdict: approval.Reject}, "  Rejected; the worker is told."},
		{push, approval.Decision{Verdict: approval.Approve, Comments: comments[:1]}, "  Approved; the push goes ahead, and the worker gets your 1 comment."},
		{push, approval.Decision{Verdict: approval.Pick, Accept: make([]approval.Accepted, 2), Commits: []plumbing.Hash{id, id}, New: id},
			"  Approved the hunks you picked, as 2 commits ending in 1234567; the push goes ahead."},
		{push, approval.Decision{Verdict: approval.Pick, Paths: []string{"a", "b"}, New: id}, "  Approved 2 picked files as commit 1234567; the push goes ahead."},
	} {
		if got := outcome(tc.r, tc.d); got != tc.want {
			t.Errorf("outcome of %+v:\n got %q\nwant %q", tc.d, got, tc.want)
		}
	}
}
