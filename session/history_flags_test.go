package session_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
)

// Each commit of a push lands as its own commit: a key that one commit
// adds and a later one removes is in the target's history, whatever the
// push's final tree holds. The request must flag it, and a pick that
// lands that commit's line must keep the flag.
func TestSecretInAnEarlierCommitIsFlagged(t *testing.T) {
	path := repo(t, false, map[string]string{"README.md": "# r\n"})
	e := newEnv(t, path, config{})
	e.write(t, "deploy.env", "REGION=eu\naws_key = AKIAIOSFODNN7EXAMPLE\n")
	_, err := e.s.Stage(nil, "Add the deploy settings")
	must(t, err)
	must(t, e.s.Workspace().Remove("deploy.env"))
	e.write(t, "README.md", "# r\n\nDeploy with make.\n")
	_, err = e.s.Stage(nil, "Document the deploy")
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := e.s.Push(context.Background(), "", "", nil)
		done <- err
	}()
	req := waitPending(t, e.gate, 1)[0]
	if len(req.Commits) != 2 {
		t.Fatalf("commits %+v: want two", req.Commits)
	}
	var secret *approval.Flag
	for i, f := range req.Flags {
		if f.Code == approval.FlagSecret {
			secret = &req.Flags[i]
		}
	}
	if secret == nil {
		t.Fatalf("flags %+v: the key the first commit adds (and the second removes) lands in history unflagged", req.Flags)
	}
	if secret.Path != "deploy.env" || strings.Contains(secret.Message, "AKIA") {
		t.Errorf("flag %+v: want it on deploy.env, not quoting the key", secret)
	}
	// A pick of the second commit's README alone lands no key.
	only := []approval.Accepted{{Commit: req.Commits[1].ID, Files: []approval.AcceptedFile{{Path: "README.md", Whole: true}}}}
	if hasCode(approval.PickFlags(req, nil, only), approval.FlagSecret) {
		t.Errorf("a pick of README.md alone keeps the secret flag")
	}
	first := []approval.Accepted{{Commit: req.Commits[0].ID, Files: []approval.AcceptedFile{{Path: "deploy.env", Whole: true}}}}
	if !hasCode(approval.PickFlags(req, nil, first), approval.FlagSecret) {
		t.Errorf("a pick of the first commit's deploy.env dropped the secret flag")
	}
	_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject})
	must(t, err)
	<-done
}
