package review_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
)

// withHunks makes a submitted request the real two-commit push of
// hunkRequest, to the server's branch.
func withHunks(t *testing.T) func(*approval.Request) {
	h := hunkRequest(t)
	return func(r *approval.Request) {
		r.Old, r.New, r.Tree, r.Commits, r.Files, r.Diff = h.Old, h.New, h.Tree, h.Commits, h.Files, h.Diff
		r.Added, r.Deleted, r.Flags = h.Added, h.Deleted, approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	}
}

// submitPickable asks s's gate about a push to branch that the reviewer
// may pick from (the gate is given where picks go, as a server does).
func (s *server) submitPickable(t *testing.T, branch string, edit func(*approval.Request)) *approval.Ticket {
	t.Helper()
	r := approvaltest.SampleRequest()
	r.Worker, r.Session, r.Describe, r.Ref = "writer", "sess", r.Target, "refs/heads/"+branch
	edit(r)
	tk, err := s.gate.Submit(r, make(chan *approval.PickAsk, 1))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestListFromEveryPrompt: l goes to the list (of one, here) from the
// prompt of a request shown directly, and from every question under it:
// picking a hunk, splitting one, choosing a comment's file and line, the
// summary of a pick.
func TestListFromEveryPrompt(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, 1001, "writer")
	tk := a.submitPickable(t, "limits", withHunks(t))
	r := watch(t, dir, 1)
	s := &approvaltest.Script{TTY: true,
		Keys:  []rune("l" + "pl" + "c" + "c" + "psl" + "pyyyyyl" + "r"),
		Lines: []string{"", "", "l", "", "1", "l", "", "", "", "not now"}}
	if err := review.Review(context.Background(), r, s, true); err != nil {
		t.Fatalf("%v\n%s", err, s.Out.String())
	}
	out := s.Out.String()
	if got := strings.Count(out, "1 request is waiting:"); got != 6 {
		t.Errorf("the list of one was shown %d times, want 6:\n%s", got, out)
	}
	if strings.Contains(out, "Unknown key") || !strings.Contains(out, "[l]ist") {
		t.Errorf("l was not offered or not known:\n%s", out)
	}
	if got := outcome(t, tk); got != "rejected" {
		t.Errorf("the request was %s", got)
	}
}

// TestNetworkWording: a network request, shown directly, goes to the list
// with l; denied, it is told as denied, never as a push.
func TestNetworkWording(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, 1001, "writer")
	tk := a.submit(t, "writer", "sess", "", "", "", func(r *approval.Request) {
		r.Kind, r.Command, r.Reason = approval.KindNetwork, "npm install", "dependencies"
	})
	r := watch(t, dir, 1)
	s := &approvaltest.Script{TTY: true, Keys: []rune("lr"), Lines: []string{"", "offline today"}}
	if err := review.Review(context.Background(), r, s, true); err != nil {
		t.Fatalf("%v\n%s", err, s.Out.String())
	}
	out := s.Out.String()
	for _, want := range []string{"1 request is waiting:", "network access for: npm install", "[l] back to the list",
		`Denied; the command runs without the network, and the worker is told why: "offline today".`} {
		if !strings.Contains(out, want) {
			t.Errorf("the reviewer did not see %q:\n%s", want, out)
		}
	}
	if strings.Contains(strings.ToLower(out), "push") {
		t.Errorf("a network request was worded as a push:\n%s", out)
	}
	if got := outcome(t, tk); got != "rejected" {
		t.Errorf("the request was %s", got)
	}
}

// TestBaseLineAfterAnApproval: a request asked before this reviewer
// approved another push to its target and branch says the branch has
// moved; one to another branch does not.
func TestBaseLineAfterAnApproval(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, 1001, "writer")
	first := a.submit(t, "writer", "s1", "", "reports", "", nil)
	a.submit(t, "writer", "s2", "", "reports", "", nil)
	a.submit(t, "writer", "s3", "", "other", "", nil)
	r := watch(t, dir, 3)
	s := &approvaltest.Script{TTY: true, Keys: []rune("a" + "l" + "l"), Lines: []string{"1", "2", "3"}}
	review.Review(context.Background(), r, s, false) // ends when the script does
	if got := outcome(t, first); got != "approved" {
		t.Fatalf("the first request was %s:\n%s", got, s.Out.String())
	}
	out := s.Out.String()
	const moved = "the branch has moved since:"
	prompts := strings.Split(out, "git_push")[1:]
	if len(prompts) != 3 {
		t.Fatalf("%d prompts:\n%s", len(prompts), out)
	}
	if strings.Contains(prompts[0], moved) || !strings.Contains(prompts[1], moved) || strings.Contains(prompts[2], moved) {
		t.Errorf("the base lines:\n%s", out)
	}
	if !strings.Contains(prompts[1], "you approved another push to it; if what\n          lands changes, approving asks you again") {
		t.Errorf("the moved base line:\n%s", prompts[1])
	}
}

// TestListFromHighRiskConfirm: l at the question a high risk asks goes to
// the list, approving nothing.
func TestListFromHighRiskConfirm(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, 1001, "writer")
	tk := a.submit(t, "writer", "sess", "", "main", "", func(r *approval.Request) {
		r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	})
	r := watch(t, dir, 1)
	s := &approvaltest.Script{TTY: true, Keys: []rune("ar"), Lines: []string{"l", "", "no"}}
	if err := review.Review(context.Background(), r, s, true); err != nil {
		t.Fatalf("%v\n%s", err, s.Out.String())
	}
	if out := s.Out.String(); !strings.Contains(out, "Type yes to approve anyway: l") || !strings.Contains(out, "1 request is waiting:") {
		t.Errorf("l at the high risk's question:\n%s", out)
	}
	if got := outcome(t, tk); got != "rejected" {
		t.Errorf("the request was %s", got)
	}
}
