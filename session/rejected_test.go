package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/worker"
)

const rejectedToken = "REJECTED-TOKEN-8c1f0d"

// Issue 32: after a rejection the worker followed the advice (fix, stage,
// push again); the rejected commit stayed staged and landed under the
// fix, its content in the target's history for good, and git_discard {}
// of it was refused. Following the rejection's advice literally (drop it
// with git_discard, or replace it with git_stage amend: true) lands no
// rejected content: not in `git log -p`, not among `git rev-list
// --objects`. Staging the fix on top, the old way, shows the rejected
// commit to the reviewer again as its own commit, flagged.
func TestRejectedCommitNeverLandsUnseen(t *testing.T) {
	for _, way := range []string{"amend", "discard by id", "discard without an id", "staged on top"} {
		t.Run(way, func(t *testing.T) {
			bare := repo(t, true, map[string]string{"README.md": "# p\n"})
			spec := &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}
			w := &worker.Worker{Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
				DefaultTarget: spec, AutoPull: []worker.PullSpec{{Path: ".", Source: spec}}}
			e := newEnvWorker(t, w, config{})
			e.write(t, "config.txt", "token = "+rejectedToken+"\n")
			bad, err := e.s.Stage(nil, "Add the config")
			must(t, err)
			push := func() chan error {
				done := make(chan error, 1)
				go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
				return done
			}
			done := push()
			req := waitPending(t, e.gate, 1)[0]
			_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject, Reason: "no tokens in config", By: "reviewer"})
			must(t, err)
			err = <-done
			if !errors.Is(err, approval.ErrRejected) {
				t.Fatalf("push: %v", err)
			}
			for _, want := range []string{"git_discard commit_id=" + bad.ID.String()[:7], "git_stage amend: true", "git_discard with no commit_id"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the rejection's advice lacks %q:\n%v", want, err)
				}
			}
			h, err := e.s.Repo("")
			must(t, err)
			e.write(t, "config.txt", "token = from the environment\n")
			switch way {
			case "amend":
				_, _, err := h.Amend(nil, "")
				must(t, err)
			case "discard by id", "discard without an id":
				id := bad.ID.String()[:7]
				if way == "discard without an id" {
					id = ""
				}
				d, err := h.Discard(id, false)
				must(t, err)
				if d.Count != 1 {
					t.Errorf("discard dropped %d commits", d.Count)
				}
				_, err = e.s.Stage(nil, "Add the config, token from the environment")
				must(t, err)
			case "staged on top":
				_, err = e.s.Stage(nil, "Read the token from the environment")
				must(t, err)
			}
			done = push()
			req = waitPending(t, e.gate, 1)[0]
			if req.Since == nil || len(req.Since.Commits) != len(req.Commits) {
				t.Fatalf("the re-review says nothing of its commits: %+v", req.Since)
			}
			flagged := false
			for _, f := range req.Flags {
				flagged = flagged || f.Code == approval.FlagRejectedAgain && f.Commit == bad.ID.String()
			}
			switch st := req.Since.Commits[0]; way {
			case "amend":
				if st.Status != approval.CommitReplaces || st.Was != bad.ID || flagged {
					t.Errorf("the amended commit: %+v (flagged %v); want it to replace %s", st, flagged, bad.ID)
				}
			case "staged on top":
				if st.Status != approval.CommitRejected || !flagged || !strings.Contains(st.Diff, "+token = "+rejectedToken) ||
					req.Since.Commits[1].Status != approval.CommitNew {
					t.Errorf("the rejected commit under the fix: %+v (flagged %v); want it shown as rejected, with its diff", req.Since.Commits, flagged)
				}
			default:
				if st.Status != approval.CommitNew || flagged {
					t.Errorf("the new commit: %+v (flagged %v)", st, flagged)
				}
			}
			_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve, By: "reviewer"})
			must(t, err)
			must(t, <-done)
			history := git(t, bare, "log", "-p", "--all")
			objects := git(t, bare, "rev-list", "--objects", "--all")
			blob := plumbing.ComputeHash(plumbing.BlobObject, []byte("token = "+rejectedToken+"\n")).String()
			landed := strings.Contains(history, rejectedToken) || strings.Contains(objects, blob)
			if way == "staged on top" {
				// Shown again as its own commit and approved: it lands.
				if !landed {
					t.Errorf("the approved commit did not land")
				}
				return
			}
			if landed {
				t.Errorf("the rejected content is in the target's history:\n%s", history)
			}
		})
	}
}

// An amend whose message is refused changes nothing: the push waiting for
// review of the commit it would replace is still waiting, under its id.
func TestAmendWithABadMessageWithdrawsNothing(t *testing.T) {
	bare := repo(t, true, map[string]string{"README.md": "# p\n"})
	spec := &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}
	w := &worker.Worker{Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: spec, AutoPull: []worker.PullSpec{{Path: ".", Source: spec}}}
	e := newEnvWorker(t, w, config{})
	e.write(t, "notes.txt", "first\n")
	_, err := e.s.Stage(nil, "Add notes")
	must(t, err)
	done := make(chan error, 1)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	req := waitPending(t, e.gate, 1)[0]
	h, err := e.s.Repo("")
	must(t, err)
	e.write(t, "notes.txt", "second\n")
	if _, _, err := h.Amend(nil, "Fix\x1b[2J the notes"); err == nil {
		t.Fatal("an amend with a control character in its message was taken")
	}
	if p := e.gate.Pending(); len(p) != 1 || p[0].ID != req.ID {
		t.Fatalf("after a refused amend the pending requests are %v; want %s still waiting", p, req.ID)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject, Reason: "done", By: "reviewer"})
	must(t, err)
	<-done
}
