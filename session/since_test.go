package session_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
)

// Issue 24: two pushes of one session wait on the same branch; when one
// lands, the other is asked again against the branch's new head, so its
// base line and diff are current, and says why (Since: the target moved,
// and nothing changed in what it pushes).
func TestWaitingRequestAskedAgainWhenItsBranchMoves(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	c1, err := e.s.Stage(nil, "A")
	must(t, err)
	e.write(t, "b.txt", "b\n")
	c2, err := e.s.Stage(nil, "B")
	must(t, err)
	base := strings.TrimSpace(git(t, r, "rev-parse", "main"))
	d1, d2 := make(chan error, 1), make(chan error, 1)
	go func() { _, err := e.s.Push(context.Background(), c1.ID.String(), "", nil); d1 <- err }()
	waitPending(t, e.gate, 1)
	go func() { _, err := e.s.Push(context.Background(), c2.ID.String(), "", nil); d2 <- err }()
	var r1, r2 *approval.Request
	for _, q := range waitPending(t, e.gate, 2) {
		if q.New == c1.ID {
			r1 = q
		} else {
			r2 = q
		}
	}
	if r2.Old.String() != base || !strings.Contains(r2.Diff, "a.txt") {
		t.Fatalf("the second request before: old %s, diff:\n%s", r2.Old, r2.Diff)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: r1.ID, Verdict: approval.Approve})
	must(t, err)
	must(t, <-d1)
	again := waitPending(t, e.gate, 1)[0]
	if again.ID == r2.ID || again.New != c2.ID || again.Old != c1.ID {
		t.Fatalf("asked again: %s %s over %s; want a new request for %s over %s", again.ID, again.New, again.Old, c2.ID, c1.ID)
	}
	if len(again.Files) != 1 || again.Files[0].Path != "b.txt" || strings.Contains(again.Diff, "a.txt") {
		t.Errorf("the request asked again shows %+v:\n%s", again.Files, again.Diff)
	}
	if sn := again.Since; sn == nil || sn.Request != r2.ID || sn.Why != "the target moved" || sn.Tree != r2.Tree || sn.Interdiff != "" {
		t.Errorf("since = %+v; want r2, the target moved, and no difference in what it pushes", sn)
	}
	if _, err := e.gate.Resolve(approval.Decision{Request: r2.ID, Verdict: approval.Approve}); err == nil {
		t.Error("the replaced request could still be approved")
	}
	_, err = e.gate.Resolve(approval.Decision{Request: again.ID, Verdict: approval.Approve})
	must(t, err)
	must(t, <-d2)
	if head := strings.TrimSpace(git(t, r, "rev-parse", "main")); head != c2.ID.String() {
		t.Errorf("main at %s, want %s", head, c2.ID)
	}
}

// A push the reviewer picked files of, whose target moved before it
// landed, is asked again; the new request says it follows the first and
// shows, of the files either changes, only what differs from what the
// reviewer saw: not the other commit that moved the branch.
func TestAskedAgainAfterTheTargetMovedSaysSince(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	e.write(t, "b.txt", "b\n")
	_, err := e.s.Stage(nil, "A and B")
	must(t, err)
	done := make(chan error, 1)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	first := waitPending(t, e.gate, 1)[0]
	commitTo(t, r, "other.txt", "someone else\n")
	_, err = e.gate.Resolve(approval.Decision{Request: first.ID, Verdict: approval.Pick, Paths: []string{"a.txt"}})
	must(t, err)
	second := waitPending(t, e.gate, 1)[0]
	sn := second.Since
	if sn == nil || sn.Request != first.ID || sn.Why != "the target moved" || sn.Tree != first.Tree {
		t.Fatalf("since = %+v", sn)
	}
	if !strings.Contains(sn.Interdiff, "diff --git a/b.txt b/b.txt\ndeleted file") || strings.Contains(sn.Interdiff, "other.txt") || strings.Contains(sn.Interdiff, "a.txt") {
		t.Errorf("interdiff:\n%s", sn.Interdiff)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: second.ID, Verdict: approval.Approve})
	must(t, err)
	must(t, <-done)
}

// A rejection without comments: the worker's next push of the same branch
// says so, and shows what changed since.
func TestPushAgainAfterARejectionSaysSince(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n", "x.txt": "x\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "one\n")
	_, err := e.s.Stage(nil, "A")
	must(t, err)
	done := make(chan error, 1)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	first := waitPending(t, e.gate, 1)[0]
	if first.Since != nil {
		t.Errorf("a first request says %+v", first.Since)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: first.ID, Verdict: approval.Reject, Reason: "not one"})
	must(t, err)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "not one") {
		t.Fatalf("rejected push: %v", err)
	}
	if text := e.s.OpenCommentsText(); text != "" {
		t.Errorf("a rejection without comments left open comments:\n%s", text)
	}
	commitTo(t, r, "x.txt", "moved elsewhere\n")
	e.write(t, "a.txt", "two\n")
	_, err = e.s.Stage(nil, "A, two")
	must(t, err)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	second := waitPending(t, e.gate, 1)[0]
	sn := second.Since
	if sn == nil || sn.Request != first.ID || sn.Why != "you rejected it" || sn.Reason != "not one" || sn.Reply != "" {
		t.Fatalf("since = %+v", sn)
	}
	if !strings.Contains(sn.Interdiff, "-one\n+two\n") || strings.Contains(sn.Interdiff, "x.txt") {
		t.Errorf("interdiff:\n%s", sn.Interdiff)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: second.ID, Verdict: approval.Approve})
	must(t, err)
	must(t, <-done)
}

// Issue 33: what a pick left out comes back, when the worker stages it
// and pushes again, as a request that says so: asked again, because the
// reviewer left it out of their pick of the first request; and, pushed
// again unchanged, nothing changed since what they saw.
func TestPushAgainAfterAPickSaysSince(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	e.write(t, "b.txt", "b\n")
	_, err := e.s.Stage(nil, "A and B")
	must(t, err)
	done := make(chan error, 1)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	first := waitPending(t, e.gate, 1)[0]
	_, err = e.gate.Resolve(approval.Decision{Request: first.ID, Verdict: approval.Pick, Paths: []string{"a.txt"}, By: "reviewer"})
	must(t, err)
	must(t, <-done)
	_, err = e.s.Stage(nil, "B, left out before")
	must(t, err)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	second := waitPending(t, e.gate, 1)[0]
	sn := second.Since
	if sn == nil || sn.Request != first.ID || sn.Why != "you left it out of your pick" {
		t.Fatalf("since = %+v; want %s, left out of the pick", sn, first.ID)
	}
	if sn.Interdiff != "" {
		t.Errorf("the part left out, pushed again unchanged, shows a difference:\n%s", sn.Interdiff)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: second.ID, Verdict: approval.Approve})
	must(t, err)
	must(t, <-done)
}
