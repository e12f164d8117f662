package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/session"
)

// waitOpen waits until the session holds open comments.
func waitOpen(t *testing.T, s interface{ OpenCommentsText() string }) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if text := s.OpenCommentsText(); text != "" {
			return text
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no open comments")
	return ""
}

// Issue 24: the reviewer's open comments and what they saw survive a
// restart: the resumed session still tells the worker the comments, and
// the next push (the rejected commit discarded before the restart, so
// only the record keeps the tree the reviewer saw) shows the reviewer
// what changed since, with the worker's reply.
func TestOpenCommentsSurviveARestart(t *testing.T) {
	bare := repo(t, true, map[string]string{"notes.txt": "one\ntwo\nthree\nfour\nfive\n", "other.txt": "x\n"})
	d := newDurable(t, bare, approval.Policy{}, nil)
	must(t, d.s.Workspace().WriteFile("notes.txt", []byte("one\ntwo\nTHREE\nfour\nfive\n"), 0o644))
	c, err := d.s.Stage(nil, "shout three")
	must(t, err)
	res, err := d.s.Push(context.Background(), c.ID.String(), "", nil)
	must(t, err)
	if !res.Pending {
		t.Fatalf("the push did not wait: %+v", res)
	}
	first := waitPending(t, d.gate, 1)[0]
	_, err = d.gate.Resolve(approval.Decision{Request: first.ID, Verdict: approval.Reject, Comments: []approval.Comment{{Path: "notes.txt", Line: 3, Text: "why shout?"}}})
	must(t, err)
	before := waitOpen(t, d.s)
	// The rejected commit goes before the restart: only the record's
	// memory of what the reviewer saw keeps its tree.
	_, err = d.s.Discard("", true)
	must(t, err)
	must(t, d.s.Save())
	d.crashAndResume(t)

	after := d.s.OpenCommentsText()
	if after != before || !strings.Contains(after, "notes.txt:3") || !strings.Contains(after, "> 3 | THREE") || !strings.Contains(after, "why shout?") {
		t.Fatalf("after the restart the open comments are:\n%s\nwant:\n%s", after, before)
	}
	must(t, d.s.Workspace().WriteFile("notes.txt", []byte("one\ntwo\nthree (quietly)\nfour\nfive\n"), 0o644))
	c2, err := d.s.Stage(nil, "three, quietly")
	must(t, err)
	h, err := d.s.Repo("")
	must(t, err)
	res, err = h.PushReply(context.Background(), c2.ID.String(), "", "no more shouting", nil)
	must(t, err)
	if !res.Pending {
		t.Fatalf("the second push did not wait: %+v", res)
	}
	second := waitPending(t, d.gate, 1)[0]
	sn := second.Since
	if sn == nil || sn.Request != first.ID || sn.Tree != first.Tree || sn.Reply != "no more shouting" || sn.Why != "you asked for changes" {
		t.Fatalf("since = %+v", sn)
	}
	if !strings.Contains(sn.Interdiff, "-THREE\n+three (quietly)\n") || strings.Contains(sn.Interdiff, "other.txt") {
		t.Errorf("interdiff:\n%s", sn.Interdiff)
	}
	if text := d.s.OpenCommentsText(); text != "" {
		t.Errorf("pushing again did not answer the comments:\n%s", text)
	}
}

// A worker whose git_push answered "still waiting" calls it again to keep
// waiting, after the reviewer sent the push back with comments: the same
// change is refused at once, and the answer carries the comments, which
// stay open (the reviewer has not seen an answer).
func TestKeepWaitingAfterCommentsHearsThem(t *testing.T) {
	r := repo(t, true, map[string]string{"notes.txt": "one\ntwo\n"})
	e := newEnv(t, r, config{timeout: 100 * time.Millisecond})
	e.write(t, "notes.txt", "one\nTWO\n")
	c, err := e.s.Stage(nil, "shout")
	must(t, err)
	res, err := e.s.Push(context.Background(), c.ID.String(), "", nil)
	must(t, err)
	if !res.Pending {
		t.Fatalf("the push did not wait: %+v", res)
	}
	req := waitPending(t, e.gate, 1)[0]
	_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject, Comments: []approval.Comment{{Path: "notes.txt", Line: 2, Text: "why shout?"}}})
	must(t, err)
	waitOpen(t, e.s)
	_, err = e.s.Push(context.Background(), c.ID.String(), "", nil)
	if !errors.Is(err, approval.ErrRejected) || !strings.Contains(err.Error(), "already rejected") || !strings.Contains(err.Error(), "notes.txt:2") || !strings.Contains(err.Error(), "why shout?") {
		t.Fatalf("keeping waiting answered: %v", err)
	}
	if text := e.s.OpenCommentsText(); !strings.Contains(text, "why shout?") {
		t.Errorf("the comments were taken as answered by the same change pushed again:\n%s", text)
	}
}

// An approval with comments whose push was rebased onto a moved branch,
// and landed on that approval: the worker still hears the comments, and
// they stay open until it pushes again.
func TestCommentsOfAnApprovalSurviveItsRebase(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	_, err := e.s.Stage(nil, "A")
	must(t, err)
	done := make(chan error, 1)
	var res session.PushResult
	go func() {
		var err error
		res, err = e.s.Push(context.Background(), "", "", nil)
		done <- err
	}()
	first := waitPending(t, e.gate, 1)[0]
	commitTo(t, r, "other.txt", "someone else\n")
	_, err = e.gate.Resolve(approval.Decision{Request: first.ID, Verdict: approval.Approve, Comments: []approval.Comment{{Path: "a.txt", Line: 1, Text: "next time, say more"}}})
	must(t, err)
	must(t, <-done)
	if !strings.Contains(strings.Join(res.Notes, "\n"), "approval of "+first.ID) {
		t.Fatalf("the push was not rebased on the approval: %+v", res)
	}
	if !strings.Contains(res.Comments, "a.txt:1") || !strings.Contains(res.Comments, "> 1 | a") || !strings.Contains(res.Comments, "next time, say more") {
		t.Errorf("the answer's comments:\n%s", res.Comments)
	}
	if !strings.Contains(e.s.OpenCommentsText(), "next time, say more") {
		t.Errorf("the comments are not open")
	}
}
