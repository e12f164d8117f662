package gittools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gittest.Git(t, dir, args...)
}

// project makes a repository with a main branch the worker pulls from.
func project(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main", ".")
	os.MkdirAll(filepath.Join(dir, "templates"), 0o755)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Project\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "templates", "report.md"), []byte("# Report\n\nTODO\n"), 0o644)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "init")
	return dir
}

type harness struct {
	t    *testing.T
	repo string
	s    *session.Session
	gate *approval.Gate
	l    *ledger.Ledger
}

func newHarness(t *testing.T, policy approval.Policy, timeout time.Duration) *harness {
	t.Helper()
	repo := project(t)
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "local", Path: repo, Branch: "main"},
		Targets:       map[string]*worker.TargetSpec{},
		AutoPull:      []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local", Path: repo, Branch: "main"}}},
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if policy.AutoApprove != nil {
		policy.AutoApprove = []string{"local:" + repo}
	}
	gate := approval.NewGate(l, policy)
	s, err := session.New(context.Background(), w, session.Options{Gate: gate, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &harness{t, repo, s, gate, l}
}

// openSession opens a session of w on a ledger of its own, with a gate of
// policy; decide, when given, answers every request as a reviewer would.
func openSession(t *testing.T, w *worker.Worker, policy approval.Policy, decide func(*approval.Request) approval.Decision) *harness {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	gate := approval.NewGate(l, policy)
	if decide != nil {
		reviewer(t, gate, decide)
	}
	s, err := session.New(context.Background(), w, session.Options{Gate: gate, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &harness{t, w.DefaultTarget.Path, s, gate, l}
}

// call runs a tool and fails the test if it errs.
func (h *harness) call(tool string, args map[string]any) string {
	h.t.Helper()
	out, err := h.try(tool, args)
	if err != nil {
		h.t.Fatalf("%s %v: %v", tool, args, err)
	}
	return out
}

func (h *harness) try(tool string, args map[string]any) (string, error) {
	raw, _ := json.Marshal(args)
	return gittools.Call(context.Background(), h.s, tool, raw, nil)
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not mention %q:\n%s", what, w, got)
		}
	}
}

func TestFileTools(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	mustContain(t, "read_file", h.call("read_file", map[string]any{"path": "README.md"}), "# Project")
	mustContain(t, "write_file", h.call("write_file", map[string]any{"path": "notes/a.md", "content": "one\ntwo\nthree\ntwo\n"}), "created notes/a.md")
	_, err := h.try("edit_file", map[string]any{"path": "notes/a.md", "old_text": "two", "new_text": "2"})
	mustContain(t, "an ambiguous edit", errString(err), "occurs 2 times", "lines 2, 4")
	_, err = h.try("edit_file", map[string]any{"path": "notes/a.md", "old_text": "nine", "new_text": "9"})
	mustContain(t, "a missing edit", errString(err), "does not occur")
	mustContain(t, "edit_file", h.call("edit_file", map[string]any{"path": "notes/a.md", "old_text": "three\n", "new_text": "3\n"}), "+1 -1", "-three", "+3")
	mustContain(t, "list_files", h.call("list_files", map[string]any{"recursive": true}), "notes/", "notes/a.md (", "templates/report.md")
	mustContain(t, "list_files pattern", h.call("list_files", map[string]any{"recursive": true, "pattern": "**/*.md"}), "notes/a.md")
	mustContain(t, "search_files", h.call("search_files", map[string]any{"pattern": "^t.o$"}), "notes/a.md:2: two", "notes/a.md:4: two")
	mustContain(t, "move_file", h.call("move_file", map[string]any{"source": "notes/a.md", "destination": "notes/b.md"}), "moved")
	mustContain(t, "delete_file", h.call("delete_file", map[string]any{"path": "notes", "recursive": true}), "deleted notes")

	// A big file comes a page at a time.
	var big strings.Builder
	for i := 0; i < 5000; i++ {
		big.WriteString("line\n")
	}
	h.call("write_file", map[string]any{"path": "big.txt", "content": big.String()})
	mustContain(t, "a paged read", h.call("read_file", map[string]any{"path": "big.txt"}), "[lines 1-2000 of 5000; read on with start_line=2001]")
	mustContain(t, "a range", h.call("read_file", map[string]any{"path": "big.txt", "start_line": 4999}), "[lines 4999-5000 of 5000]")

	// Bad arguments are tool errors that say what the arguments are.
	_, err = h.try("write_file", map[string]any{"path": "x", "text": "y"})
	mustContain(t, "an unknown argument", errString(err), `"text" is not an argument of write_file`, "content, path")
	_, err = h.try("read_file", map[string]any{"path": 7})
	mustContain(t, "a wrong type", errString(err), `argument "path" must be a string`)
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// The hostile corpus and the deny list reach the worker as errors naming
// the rule, and no host path appears in them.
func TestHostilePathsAreToolErrors(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	data, err := os.ReadFile("../internal/pathguard/testdata/hostile-paths-rules.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c struct{ Path, Rule string }
		json.Unmarshal([]byte(line), &c)
		for _, tool := range []string{"write_file", "read_file", "delete_file"} {
			args := map[string]any{"path": c.Path}
			if tool == "write_file" {
				args["content"] = "x"
			}
			_, err := h.try(tool, args)
			var te *gittools.ToolError
			if !errors.As(err, &te) || !strings.Contains(err.Error(), "rule "+c.Rule) {
				t.Errorf("%s %q: %v, want a tool error naming rule %s", tool, c.Path, err, c.Rule)
			}
			if err != nil && strings.Contains(err.Error(), h.repo) {
				t.Errorf("%s %q: the error shows a host path: %v", tool, c.Path, err)
			}
		}
	}
}

func TestStageDiffPushApproved(t *testing.T) {
	h := newHarness(t, approval.Policy{AutoApprove: []string{}}, 5*time.Second)
	h.call("write_file", map[string]any{"path": "reports/q3.md", "content": "# Q3\n"})
	mustContain(t, "git_status", h.call("git_status", nil), "base: ", "unstaged (1):", "+ reports/q3.md")
	staged := h.call("git_stage", map[string]any{"message": "Add Q3"})
	mustContain(t, "git_stage", staged, `staged `, `"Add Q3"`, "+ reports/q3.md")
	mustContain(t, "git_diff", h.call("git_diff", map[string]any{"commit_id": strings.Fields(staged)[1]}), "+# Q3", "+1 -0 across 1 file")
	out := h.call("git_push", map[string]any{})
	mustContain(t, "git_push", out, "pushed", "main")
	if got := git(t, h.repo, "show", "main:reports/q3.md"); got != "# Q3\n" {
		t.Errorf("the target has %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(h.repo, "reports", "q3.md")); string(got) != "# Q3\n" {
		t.Errorf("the checked-out working tree has %q", got)
	}
	mustContain(t, "status after the push", h.call("git_status", nil), "staged: nothing", "unstaged: nothing")
	// The push's states, each in the ledger before it is acted on.
	recs, err := ledger.Records(h.l.Path())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range recs {
		k := r.Kind
		var d struct{ Result string }
		if json.Unmarshal(r.Data, &d) == nil && d.Result != "" {
			k += ":" + d.Result
		}
		kinds = append(kinds, k)
	}
	if want := []string{ledger.KindRequest, ledger.KindDecision, ledger.KindPush + ":landing", ledger.KindPush + ":pushed"}; !slices.Equal(kinds, want) {
		t.Errorf("ledger records %v, want %v", kinds, want)
	}
}

// reviewer answers every request of the gate with decide.
func reviewer(t *testing.T, gate *approval.Gate, decide func(*approval.Request) approval.Decision) {
	events, stop := gate.Subscribe()
	t.Cleanup(stop)
	go func() {
		for e := range events {
			if e.Kind == approval.EventAdded {
				d := decide(e.Request)
				d.Request = e.Request.ID
				gate.Resolve(d)
			}
		}
	}()
}

func TestPushRejectedWithReason(t *testing.T) {
	h := newHarness(t, approval.Policy{}, 5*time.Second)
	reviewer(t, h.gate, func(*approval.Request) approval.Decision {
		return approval.Decision{Verdict: approval.Reject, Reason: "not in the README"}
	})
	h.call("write_file", map[string]any{"path": "README.md", "content": "# Rewritten\n"})
	h.call("git_stage", map[string]any{"message": "Rewrite"})
	_, err := h.try("git_push", nil)
	mustContain(t, "a rejected push", errString(err), "push rejected", "not in the README")
	if got := git(t, h.repo, "show", "main:README.md"); got != "# Project\n" {
		t.Errorf("a rejected push reached the target: %q", got)
	}
	// The same change again is refused at once, without asking.
	_, err = h.try("git_push", nil)
	mustContain(t, "a repeated push", errString(err), "already rejected in this session", "not in the README")
}

func TestPushPickedFiles(t *testing.T) {
	h := newHarness(t, approval.Policy{}, 5*time.Second)
	reviewer(t, h.gate, func(r *approval.Request) approval.Decision {
		return approval.Decision{Verdict: approval.Pick, Paths: []string{"reports/keep.md"}}
	})
	h.call("write_file", map[string]any{"path": "reports/keep.md", "content": "keep\n"})
	h.call("write_file", map[string]any{"path": "reports/drop.md", "content": "drop\n"})
	h.call("git_stage", map[string]any{"message": "Two reports"})
	mustContain(t, "a picked push", h.call("git_push", nil), "only the files the reviewer picked: reports/keep.md")
	if files := git(t, h.repo, "ls-tree", "-r", "--name-only", "main"); !strings.Contains(files, "reports/keep.md") || strings.Contains(files, "drop.md") {
		t.Errorf("target files:\n%s", files)
	}
	mustContain(t, "status after a pick", h.call("git_status", nil), "+ reports/drop.md")
}

// A push that outlasts the timeout stays pending; calling again waits on
// the same request, and the reviewer is asked once.
func TestPushPendingThenReattached(t *testing.T) {
	h := newHarness(t, approval.Policy{}, 200*time.Millisecond)
	h.call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})
	h.call("git_stage", map[string]any{"message": "A"})
	mustContain(t, "a push that timed out", h.call("git_push", nil), "still waiting for a reviewer", "again to keep waiting")
	pending := h.gate.Pending()
	if len(pending) != 1 {
		t.Fatalf("%d requests pending", len(pending))
	}
	// Approved once the second call waits on the request (its first
	// progress report says so), not before.
	waiting := make(chan struct{})
	var once sync.Once
	resolved := make(chan error, 1)
	go func() {
		<-waiting
		_, err := h.gate.Resolve(approval.Decision{Request: pending[0].ID, Verdict: approval.Approve})
		resolved <- err
	}()
	out, err := gittools.Call(context.Background(), h.s, "git_push", nil, func(float64, float64, string) { once.Do(func() { close(waiting) }) })
	if err != nil {
		t.Fatalf("the second call: %v", err)
	}
	mustContain(t, "the second call", out, "pushed")
	if err := <-resolved; err != nil {
		t.Fatalf("resolve: %v", err)
	}
	requests := 0
	recs, _ := ledger.Records(h.l.Path())
	for _, r := range recs {
		if r.Kind == ledger.KindRequest {
			requests++
		}
	}
	if requests != 1 {
		t.Errorf("%d requests in the ledger, want 1", requests)
	}
}

func TestPushMovedTargetIsRebased(t *testing.T) {
	h := newHarness(t, approval.Policy{AutoApprove: []string{}}, 5*time.Second)
	h.call("write_file", map[string]any{"path": "mine.txt", "content": "mine\n"})
	h.call("git_stage", map[string]any{"message": "Mine"})
	// Someone commits to main meanwhile.
	os.WriteFile(filepath.Join(h.repo, "theirs.txt"), []byte("theirs\n"), 0o644)
	git(t, h.repo, "add", "theirs.txt")
	git(t, h.repo, "commit", "-qm", "theirs")
	out := h.call("git_push", nil)
	mustContain(t, "a push over a moved target", out, "moved to", "rebased onto it", "pushed")
	log := git(t, h.repo, "log", "--format=%s", "main")
	if log != "Mine\ntheirs\ninit\n" {
		t.Errorf("log:\n%s", log)
	}
	// Overlapping changes are refused with the paths.
	h.call("write_file", map[string]any{"path": "theirs.txt", "content": "mine too\n"})
	h.call("git_stage", map[string]any{"message": "Edit theirs"})
	os.WriteFile(filepath.Join(h.repo, "theirs.txt"), []byte("theirs v2\n"), 0o644)
	git(t, h.repo, "commit", "-qam", "theirs v2")
	_, err := h.try("git_push", nil)
	mustContain(t, "a conflicting push", errString(err), "theirs.txt", "nothing was merged")
}

// A client that goes away withdraws its pending push.
func TestPushWithdrawnWhenClientLeaves(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Minute)
	h.call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})
	h.call("git_stage", map[string]any{"message": "A"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := gittools.Call(ctx, h.s, "git_push", json.RawMessage(`{}`), nil)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(h.gate.Pending()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if len(h.gate.Pending()) != 0 {
		t.Error("the request stayed pending after its client left")
	}
	recs, _ := ledger.Records(h.l.Path())
	if recs[len(recs)-1].Kind != ledger.KindWithdrawal {
		t.Errorf("the last ledger record is %s, want a withdrawal", recs[len(recs)-1].Kind)
	}
}

func TestCheckpointTools(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	h.call("write_file", map[string]any{"path": "a.txt", "content": "1"})
	h.call("checkpoint", map[string]any{"name": "one"})
	h.call("write_file", map[string]any{"path": "a.txt", "content": "2"})
	h.call("delete_file", map[string]any{"path": "README.md"})
	mustContain(t, "list_checkpoints", h.call("list_checkpoints", nil), "one", "2 files changed since")
	h.call("rollback", nil)
	if got := h.call("read_file", map[string]any{"path": "a.txt"}); got != "1" {
		t.Errorf("after rollback a.txt = %q", got)
	}
	mustContain(t, "README after rollback", h.call("read_file", map[string]any{"path": "README.md"}), "# Project")
	_, err := h.try("rollback", map[string]any{"name": "nope"})
	mustContain(t, "an unknown checkpoint", errString(err), `"one"`)
}

func TestPullTools(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	os.WriteFile(filepath.Join(h.repo, "new.txt"), []byte("new upstream\n"), 0o644)
	git(t, h.repo, "add", "new.txt")
	git(t, h.repo, "commit", "-qm", "upstream")
	mustContain(t, "git_pull", h.call("git_pull", nil), "updated to", "new.txt")
	mustContain(t, "pulled file", h.call("read_file", map[string]any{"path": "new.txt"}), "new upstream")
	mustContain(t, "status after pull", h.call("git_status", nil), "unstaged: nothing")
	mustContain(t, "git_pull into a directory", h.call("git_pull", map[string]any{"paths": []string{"templates/"}, "destination": "copied"}), "copied 1 files")
	mustContain(t, "status after a copy", h.call("git_status", nil), "+ copied/templates/report.md")
	_, err := h.try("git_pull", map[string]any{"source": "/etc"})
	mustContain(t, "an unknown source", errString(err), `no target is named "/etc"`)
}

// The brief's worker: pushes go to a branch that does not exist yet, and
// templates/ is pulled from the repository's main branch. The new branch
// forks from main, as `git switch -c reports main` would, and carries the
// worker's commit only; with the branch already there, the templates come
// in as the worker's own files instead.
func TestNewBranchForksFromPulledBranch(t *testing.T) {
	repo := project(t)
	w := &worker.Worker{
		Name: "reports", Author: worker.Person{Name: "Reporter", Email: "r@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "local", Path: repo, Branch: "reports"},
		Targets:       map[string]*worker.TargetSpec{},
		AutoPull:      []worker.PullSpec{{Path: "templates/", Source: &worker.TargetSpec{Type: "local", Path: repo}}},
	}
	open := func() *harness {
		return openSession(t, w, approval.Policy{AutoApprove: []string{"local:" + repo}}, nil)
	}
	h := open()
	mustContain(t, "the pulled template", h.call("read_file", map[string]any{"path": "templates/report.md"}), "TODO")
	mustContain(t, "status after the pull", h.call("git_status", nil), "unstaged: nothing")
	// Before the first push, git_pull updates from the branch forked from.
	mustContain(t, "git_pull before the first push", h.call("git_pull", nil), "still at")
	h.call("write_file", map[string]any{"path": "reports/q3.md", "content": "# Q3\n"})
	h.call("git_stage", map[string]any{"message": "Q3"})
	mustContain(t, "git_push", h.call("git_push", nil), "pushed", "(reports): 1 file")
	if log := git(t, repo, "log", "--format=%s", "reports"); log != "Q3\ninit\n" {
		t.Errorf("reports:\n%s", log)
	}
	if files := git(t, repo, "ls-tree", "-r", "--name-only", "reports"); files != "README.md\nreports/q3.md\ntemplates/report.md\n" {
		t.Errorf("reports holds:\n%s", files)
	}

	// After it, from the branch pushed to.
	other := t.TempDir()
	git(t, other, "clone", "-q", "-b", "reports", repo, ".")
	os.WriteFile(filepath.Join(other, "templates", "report.md"), []byte("# Report v2\n"), 0o644)
	git(t, other, "commit", "-qam", "template v2")
	git(t, other, "push", "-q", "origin", "reports")
	mustContain(t, "git_pull after the push", h.call("git_pull", nil), "updated to", "templates/report.md")
	mustContain(t, "the updated template", h.call("read_file", map[string]any{"path": "templates/report.md"}), "Report v2")

	// Now that reports exists, a new session bases itself on it, and the
	// templates it already holds are not the worker's changes.
	h = open()
	mustContain(t, "status on the existing branch", h.call("git_status", nil), "unstaged: nothing")
}

// edit_file takes the reference filesystem server's shape too: edits
// applied in order, all or none, and a dry run that changes nothing.
func TestEditFileEditsShape(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	h.call("write_file", map[string]any{"path": "a.md", "content": "one\ntwo\nthree\n"})
	edits := func(pairs ...string) []map[string]any {
		var out []map[string]any
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, map[string]any{"oldText": pairs[i], "newText": pairs[i+1]})
		}
		return out
	}
	mustContain(t, "a dry run", h.call("edit_file", map[string]any{"path": "a.md", "edits": edits("one", "1"), "dryRun": true}), "dry run", "-one", "+1")
	mustContain(t, "after the dry run", h.call("read_file", map[string]any{"path": "a.md"}), "one")
	_, err := h.try("edit_file", map[string]any{"path": "a.md", "edits": edits("one", "1", "nine", "9")})
	mustContain(t, "a failing second edit", errString(err), "edits[1].oldText does not occur", "nothing changed")
	mustContain(t, "all or none", h.call("read_file", map[string]any{"path": "a.md"}), "one\ntwo")
	// Each edit sees the result of the one before.
	mustContain(t, "edits in order", h.call("edit_file", map[string]any{"path": "a.md", "edits": edits("one", "1x", "1x\ntwo", "12")}), "+1 -2")
	mustContain(t, "the result", h.call("read_file", map[string]any{"path": "a.md"}), "12\nthree")
	_, err = h.try("edit_file", map[string]any{"path": "a.md", "old_text": "12", "edits": edits("three", "3")})
	mustContain(t, "both shapes", errString(err), "either old_text/new_text or edits")
}

// One glob engine (internal/glob) for list_files, search_files and the deny
// list, whose cost does not explode with the pattern: many "**" answer at
// once.
func TestGlobsAreLinear(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	deep := strings.Repeat("d/", 60) + "file.txt"
	h.call("write_file", map[string]any{"path": deep, "content": "x\n"})
	pattern := strings.Repeat("**/d*/", 100) + "nomatch"
	done := make(chan string, 1)
	go func() {
		out, _ := h.try("list_files", map[string]any{"recursive": true, "pattern": pattern})
		done <- out
	}()
	select {
	case out := <-done:
		mustContain(t, "a pattern of many **", out, "nothing in . matches")
	case <-time.After(10 * time.Second):
		t.Fatal("list_files with many ** did not answer")
	}
	mustContain(t, "** matching", h.call("list_files", map[string]any{"recursive": true, "pattern": "**/d/**/*.txt"}), deep)
	mustContain(t, "search_files glob", h.call("search_files", map[string]any{"pattern": "x", "glob": "**/file.txt"}), deep+":1: x")
	_, err := h.try("list_files", map[string]any{"recursive": true, "pattern": strings.Repeat("*", 2000)})
	mustContain(t, "an over-long pattern", errString(err), "more than the 1024 allowed")
	_, err = h.try("search_files", map[string]any{"pattern": "x", "glob": "d/[x"})
	mustContain(t, "a malformed glob", errString(err), `glob "d/[x" is not a usable glob`)
}

// git_push without a commit, or with HEAD, takes the latest staged commit
// and says which, as git push does HEAD; HEAD~1 takes the one before.
func TestPushHEAD(t *testing.T) {
	h := newHarness(t, approval.Policy{AutoApprove: []string{}}, 10*time.Second)
	mustContain(t, "git_push with nothing staged", errText(h.try("git_push", map[string]any{"commit_id": "HEAD"})), "HEAD", "nothing is staged", "git_stage")
	var ids []string
	for _, f := range []string{"a", "b", "c"} {
		h.call("write_file", map[string]any{"path": f + ".txt", "content": f + "\n"})
		ids = append(ids, strings.Fields(h.call("git_stage", map[string]any{"message": "Add " + f}))[1])
	}
	out := h.call("git_push", map[string]any{"commit_id": "HEAD~1"})
	mustContain(t, "git_push HEAD~1", out, "HEAD~1 is staged commit "+ids[1]+` "Add b" (it goes with the 1 commit staged before it)`, "pushed "+ids[1])
	if got := strings.TrimSpace(git(t, h.repo, "log", "-1", "--format=%s", "main")); got != "Add b" {
		t.Errorf("main is at %q after pushing HEAD~1", got)
	}
	out = h.call("git_push", map[string]any{"commit_id": "HEAD"})
	mustContain(t, "git_push HEAD", out, "HEAD is staged commit "+ids[2]+` "Add c"`, "pushed "+ids[2])
	h.call("write_file", map[string]any{"path": "d.txt", "content": "d\n"})
	d := strings.Fields(h.call("git_stage", map[string]any{"message": "Add d"}))[1]
	mustContain(t, "git_push without a commit", h.call("git_push", nil), "HEAD is staged commit "+d+` "Add d":`, "pushed "+d)
	if got := strings.TrimSpace(git(t, h.repo, "log", "-1", "--format=%s", "main")); got != "Add d" {
		t.Errorf("main is at %q", got)
	}
}

func errText(_ string, err error) string {
	if err == nil {
		return "(no error)"
	}
	return err.Error()
}

// A commit id the worker names that no staged commit has is answered with
// the id exactly as typed (not a zero-padded or shortened form of it), for
// each tool that takes one, with where the staged ids are listed.
func TestUnknownCommitIDEchoedAsGiven(t *testing.T) {
	h := newHarness(t, approval.Policy{AutoApprove: []string{}}, 10*time.Second)
	h.call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})
	staged := strings.Fields(h.call("git_stage", map[string]any{"message": "Add a"}))[1]
	for _, id := range []string{"abc1234", "ABC1234", "abcd12345", "0123456789abcdef0123456789abcdef01234567"} {
		if strings.HasPrefix(staged, strings.ToLower(id)[:4]) {
			t.Fatalf("the staged commit %s starts like %s: pick another id", staged, id)
		}
		for _, tool := range []string{"git_diff", "git_discard", "git_push"} {
			out, err := h.try(tool, map[string]any{"commit_id": id})
			if err == nil {
				t.Fatalf("%s commit_id=%s: no error, %s", tool, id, out)
			}
			mustContain(t, tool+" commit_id="+id, err.Error(), " "+id+";", "git_status", staged)
		}
	}
	// A checkpoint is named by the worker's name for it, echoed as given.
	h.call("checkpoint", map[string]any{"name": "before"})
	_, err := h.try("rollback", map[string]any{"name": "abc1234"})
	mustContain(t, "rollback name=abc1234", errText("", err), `"abc1234"`, "before")
	// A hostile id is sanitised before it is echoed.
	_, err = h.try("git_diff", map[string]any{"commit_id": "abc1\x1b]0;pwned\x07"})
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07") {
		t.Errorf("git_diff of an id holding escapes: %v", err)
	}
}
