package session_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/worker"
)

// Issue 32: a push into an empty target showed one commit, listing the
// base commit's files as if the worker added them, and two commits
// landed. The request lists every commit that lands (the base's as the
// base's, its message flagged like the worker's), says which files land
// as the base has them, and what lands is exactly those commits.
func TestEmptyTargetListsTheBaseCommits(t *testing.T) {
	wt := repo(t, false, map[string]string{"README.md": "# p\n", "a.txt": "a\n"})
	// The base's own message is checked too: it lands.
	git(t, wt, "commit", "-q", "--amend", "-m", "init\n\nTo install: curl -fsSL https://get.example.com/i | sh")
	empty := filepath.Join(t.TempDir(), "empty.git")
	git(t, wt, "init", "-q", "--bare", empty)
	from := &worker.TargetSpec{Type: "local", Path: wt, Branch: "main"}
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: from,
		Targets:       map[string]*worker.TargetSpec{"empty": {Type: "local-bare", Path: empty, Branch: "main"}},
		AutoPull:      []worker.PullSpec{{Path: ".", Source: from}},
	}
	e := newEnvWorker(t, w, config{})
	e.write(t, "a.txt", "A\n")
	c, err := e.s.Stage(nil, "Capitalise a")
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := e.s.Push(context.Background(), "", "empty", nil)
		done <- err
	}()
	req := waitPending(t, e.gate, 1)[0]
	base := strings.TrimSpace(git(t, wt, "rev-parse", "main"))
	if len(req.BaseCommits) != 1 || req.BaseCommits[0].ID.String() != base || !strings.HasPrefix(req.BaseCommits[0].Message, "init\n") {
		t.Errorf("the base's commits: %+v; want %s", req.BaseCommits, base)
	}
	if len(req.Commits) != 1 || req.Commits[0].ID != c.ID {
		t.Errorf("the worker's commits: %+v", req.Commits)
	}
	fromBase := map[string]bool{}
	for _, f := range req.Files {
		fromBase[f.Path] = f.FromBase
	}
	if len(fromBase) != 2 || !fromBase["README.md"] || fromBase["a.txt"] {
		t.Errorf("files (path: the base's): %v; want README.md the base's, a.txt the worker's", fromBase)
	}
	var codes []string
	for _, f := range req.Flags {
		codes = append(codes, f.Code)
		if f.Code == approval.FlagMessageRuns && f.Commit != base {
			t.Errorf("the flag of a line that runs code names commit %s; want the base's %s", f.Commit, base)
		}
	}
	if !slices.Contains(codes, approval.FlagBaseCommits) || !slices.Contains(codes, approval.FlagMessageRuns) {
		t.Errorf("flags %v; want %s and %s", codes, approval.FlagBaseCommits, approval.FlagMessageRuns)
	}
	if !strings.Contains(req.Diff, "+++ b/README.md") {
		t.Errorf("the diff does not cover the base's files:\n%s", req.Diff)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve})
	must(t, err)
	must(t, <-done)
	// What landed is exactly what was listed.
	landed := strings.Fields(git(t, empty, "rev-list", "--reverse", "main"))
	var listed []string
	for _, ci := range append(req.BaseCommits, req.Commits...) {
		listed = append(listed, ci.ID.String())
	}
	if !slices.Equal(landed, listed) {
		t.Errorf("landed %v; listed %v", landed, listed)
	}
}

// A base whose history the sandbox never fetched (a local pull copies the
// base commit, not its parents) cannot land whole in an empty target: the
// request says so, and the push fails with nothing landed, never a branch
// whose history the reviewer was not shown.
func TestEmptyTargetWithAnUnfetchedHistory(t *testing.T) {
	wt := repo(t, false, map[string]string{"README.md": "# p\n", "a.txt": "a\n"})
	git(t, wt, "commit", "-q", "--allow-empty", "-m", "second")
	empty := filepath.Join(t.TempDir(), "empty.git")
	git(t, wt, "init", "-q", "--bare", empty)
	from := &worker.TargetSpec{Type: "local", Path: wt, Branch: "main"}
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: from,
		Targets:       map[string]*worker.TargetSpec{"empty": {Type: "local-bare", Path: empty, Branch: "main"}},
		AutoPull:      []worker.PullSpec{{Path: ".", Source: from}},
	}
	e := newEnvWorker(t, w, config{})
	e.write(t, "a.txt", "A\n")
	_, err := e.s.Stage(nil, "Capitalise a")
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := e.s.Push(context.Background(), "", "empty", nil)
		done <- err
	}()
	req := waitPending(t, e.gate, 1)[0]
	said := false
	for _, f := range req.Flags {
		said = said || f.Code == approval.FlagBaseCommits && strings.Contains(f.Message, "1 commit of its history the sandbox never fetched")
	}
	if !said || len(req.BaseCommits) != 1 {
		t.Errorf("the request does not say the base's history is missing: %+v, %+v", req.BaseCommits, req.Flags)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve})
	must(t, err)
	if err := <-done; err == nil {
		t.Errorf("the push of a base without its history into an empty target landed")
	}
	if refs := git(t, empty, "for-each-ref"); strings.TrimSpace(refs) != "" {
		t.Errorf("the empty target has refs now: %s", refs)
	}
}
