package session_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/worker"
)

// Issue 24: a new branch on a bare repository showed the whole tree as new
// (every file of the repository) instead of what differs from the commit
// it forks from. The request diffs against that commit and names it and
// its branch, whether the base was pulled from that bare repository or
// from a working tree it is a clone of.
func TestNewBranchDiffedAgainstItsFork(t *testing.T) {
	files := map[string]string{"README.md": "# p\n", "a.txt": "a\n", "b.txt": "b\n", "c/d.txt": "d\n", "e.txt": "e\n"}
	for _, tc := range []struct {
		name string
		bare bool // the base is pulled from the bare repository, else from the working tree it is a clone of
	}{
		{"pulled from the bare repository", true},
		{"pulled from a working tree the bare repository is a clone of", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wt := repo(t, false, files)
			bare := filepath.Join(t.TempDir(), "origin.git")
			git(t, wt, "clone", "-q", "--bare", wt, bare)
			from := &worker.TargetSpec{Type: "local", Path: wt, Branch: "main"}
			if tc.bare {
				from = &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}
			}
			tc := struct{ from *worker.TargetSpec }{from}
			w := &worker.Worker{
				Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
				DefaultTarget: tc.from,
				Targets:       map[string]*worker.TargetSpec{"feature": {Type: "local-bare", Path: bare, Branch: "feature"}},
				AutoPull:      []worker.PullSpec{{Path: ".", Source: tc.from}},
			}
			e := newEnvWorker(t, w, config{})
			e.write(t, "a.txt", "A\n")
			_, err := e.s.Stage(nil, "A")
			must(t, err)
			done := make(chan error, 1)
			go func() {
				_, err := e.s.Push(context.Background(), "", "feature", nil)
				done <- err
			}()
			req := waitPending(t, e.gate, 1)[0]
			base := strings.TrimSpace(git(t, bare, "rev-parse", "main"))
			if !req.NewRef || len(req.Files) != 1 || req.Files[0].Path != "a.txt" || req.Added != 1 || req.Deleted != 1 {
				t.Errorf("the new branch's request shows %d files (+%d -%d): %+v; want a.txt alone", len(req.Files), req.Added, req.Deleted, req.Files)
			}
			if req.Fork.String() != base || req.ForkRef != "main" {
				t.Errorf("fork %s of %q; want %s of main", req.Fork, req.ForkRef, base)
			}
			if !strings.Contains(req.Diff, "-a\n+A\n") || strings.Contains(req.Diff, "README.md") {
				t.Errorf("diff:\n%s", req.Diff)
			}
			_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve})
			must(t, err)
			must(t, <-done)
			if got := git(t, bare, "show", "feature:a.txt"); got != "A\n" {
				t.Errorf("feature:a.txt = %q", got)
			}
		})
	}
}

// A base the target does not hold as its branch's head (the clone's main
// moved on since) is not claimed as the fork: the reviewer sees every
// file, as git would have to send them.
func TestNewBranchWithoutAForkShowsEveryFile(t *testing.T) {
	wt := repo(t, false, map[string]string{"README.md": "# p\n", "a.txt": "a\n"})
	bare := filepath.Join(t.TempDir(), "other.git")
	git(t, wt, "init", "-q", "--bare", bare)
	from := &worker.TargetSpec{Type: "local", Path: wt, Branch: "main"}
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: from,
		Targets:       map[string]*worker.TargetSpec{"feature": {Type: "local-bare", Path: bare, Branch: "feature"}},
		AutoPull:      []worker.PullSpec{{Path: ".", Source: from}},
	}
	e := newEnvWorker(t, w, config{})
	e.write(t, "a.txt", "A\n")
	_, err := e.s.Stage(nil, "A")
	must(t, err)
	go e.s.Push(context.Background(), "", "feature", nil)
	req := waitPending(t, e.gate, 1)[0]
	if len(req.Files) != 2 || !req.Fork.IsZero() || req.ForkRef != "" {
		t.Errorf("a repository without the base: %d files, fork %s %q; want both files, no fork", len(req.Files), req.Fork, req.ForkRef)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject})
	must(t, err)
}
