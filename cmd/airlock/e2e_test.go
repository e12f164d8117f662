//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/ptytest"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The end-to-end tests run the real airlock binary, built once.

var (
	binDir    string
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	sandbox.Main() // this binary may be a command sandbox's helper
	dir, err := os.MkdirTemp("", "airlock-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// airlockBinary builds the command (once per test binary) and returns its
// path.
func airlockBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out := filepath.Join(binDir, "airlock")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, b)
			return
		}
		binPath = out
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

var expectedTools = []string{
	"read_file", "write_file", "edit_file", "list_files", "search_files", "delete_file", "move_file",
	"git_status", "git_stage", "git_diff", "git_push", "git_discard", "git_pull",
	"checkpoint", "rollback", "list_checkpoints",
}

// TestEndToEnd runs a worker against the real airlock serve over MCP, and
// a person at the real airlock review in a pseudo-terminal: one push is
// approved and lands in the repository, the next is rejected with a reason
// the worker is told, and the repository and the ledger stay sound.
func TestEndToEnd(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	root := t.TempDir()
	env := isolatedEnv(t, root)

	// The target: a repository with one commit on main, and a branch
	// agent (not checked out) where the worker's pushes go.
	repo := filepath.Join(root, "project")
	files := map[string]string{
		"README.md":         "# Project\n\nReports live in reports/.\n",
		"docs/guide.md":     "# Guide\n\nStep one.\nStep two.\n",
		"docs/data.sqlite":  "SQLite format 3\x00not really\n",
		"src/main.go":       "package main\n\nfunc main() {}\n",
		"reports/.gitkeep":  "",
		"docs/nested/a.txt": "a\n",
	}
	initRepo(t, env, repo, files)
	mustGit(t, env, repo, "branch", "agent")
	initial := strings.TrimSpace(mustGit(t, env, repo, "rev-parse", "main"))

	workerFile := filepath.Join(root, "writer.md")
	front := fmt.Sprintf(`---
name: e2e-writer
description: Writes reports, in an end-to-end test
author:
  name: E2E Writer
  email: e2e-writer@example.com
git:
  default_target:
    type: local
    path: %q
    branch: agent
  auto_pull:
    - path: docs
sandbox:
  deny: ["*.sqlite"]
---
You write the quarterly reports in reports/.
`, repo)
	if err := os.WriteFile(workerFile, []byte(front), 0o644); err != nil {
		t.Fatal(err)
	}

	// The server, with the worker as its MCP client.
	serveErr := &lockedBuffer{}
	serve := exec.Command(bin, "serve", "--worker", workerFile, "--timeout", "60s")
	serve.Env = env
	serve.Dir = root
	serve.Stderr = serveErr
	client := mcp.NewClient(&mcp.Implementation{Name: "airlock-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve, TerminateDuration: 3 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting to airlock serve: %v\nits stderr:\n%s", err, serveErr.String())
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			cs.Close()
		}
		if serve.Process != nil {
			serve.Process.Kill()
		}
		if t.Failed() {
			t.Logf("airlock serve's stderr:\n%s", serveErr.String())
		}
	})
	ledgerFile := filepath.Join(root, "state", "airlock", "ledger.jsonl")
	w := &worker{t: t, ctx: ctx, cs: cs, ledger: ledgerFile}

	// The tools.
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s has no description or input schema", tool.Name)
		}
	}
	sort.Strings(names)
	want := append([]string(nil), expectedTools...)
	if sandbox.Available() == nil {
		// Where commands can be sandboxed, and only there.
		want = append(want, "run", "run_output")
	}
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("tools:\n got %v\nwant %v", names, want)
	}

	// auto_pull brought docs/ in, except what the sandbox denies; nothing
	// else of the repository is in the workspace.
	listing := w.call("list_files", map[string]any{"recursive": true})
	mustContain(t, "list_files", listing, "docs/guide.md", "docs/nested/a.txt")
	for _, absent := range []string{"data.sqlite", "README.md", "src/"} {
		if strings.Contains(listing, absent) {
			t.Errorf("list_files shows %s, which auto_pull of docs (with *.sqlite denied) must not bring in:\n%s", absent, listing)
		}
	}
	if got := w.call("read_file", map[string]any{"path": "docs/guide.md"}); got != files["docs/guide.md"] {
		t.Errorf("read_file docs/guide.md = %q, want %q", got, files["docs/guide.md"])
	}
	mustContain(t, "read_file of a denied file", w.refused("read_file", map[string]any{"path": "docs/data.sqlite"}), "rule deny-pattern")

	// Writing and editing.
	mustContain(t, "write_file", w.call("write_file", map[string]any{"path": "reports/q3.md",
		"content": "# Q3 report\n\nRevenue grew 15%.\nCosts were flat.\n"}), "created reports/q3.md")
	mustContain(t, "edit_file", w.call("edit_file", map[string]any{"path": "reports/q3.md",
		"old_text": "Costs were flat.", "new_text": "Costs fell 2%."}), "edited reports/q3.md (+1 -1)", "+Costs fell 2%.")
	w.call("edit_file", map[string]any{"path": "docs/guide.md", "old_text": "Step two.\n", "new_text": "Step two.\nStep three.\n"})
	mustContain(t, "edit_file with text that is not there", w.refused("edit_file", map[string]any{"path": "docs/guide.md",
		"old_text": "Step four.", "new_text": "x"}), "does not occur")
	mustContain(t, "search_files", w.call("search_files", map[string]any{"pattern": "Revenue|Step three"}),
		"reports/q3.md:3: Revenue grew 15%.", "docs/guide.md:5: Step three.")

	// Checkpoints undo.
	w.call("checkpoint", map[string]any{"name": "before-detour"})
	w.call("write_file", map[string]any{"path": "scratch.txt", "content": "throwaway\n"})
	w.call("move_file", map[string]any{"source": "docs/nested/a.txt", "destination": "docs/a.txt"})
	mustContain(t, "list_checkpoints", w.call("list_checkpoints", nil), "before-detour")
	mustContain(t, "rollback", w.call("rollback", map[string]any{"name": "before-detour"}), "rolled back")
	w.refused("read_file", map[string]any{"path": "scratch.txt"})
	if got := w.call("read_file", map[string]any{"path": "docs/nested/a.txt"}); got != "a\n" {
		t.Errorf("after rollback docs/nested/a.txt = %q", got)
	}

	// Hostile paths and denied files are tool errors naming the rule, and
	// never show where the repository is on the host.
	for _, c := range hostileSample(t, 20) {
		out := w.refused("write_file", map[string]any{"path": c.Path, "content": "x"})
		if !strings.Contains(out, "rule "+c.Rule) {
			t.Errorf("write_file %q: %q does not name rule %s", c.Path, out, c.Rule)
		}
		if strings.Contains(out, root) {
			t.Errorf("write_file %q: the error shows a host path: %q", c.Path, out)
		}
	}
	for _, p := range []string{"x.sqlite", "reports/cache.sqlite", ".env", "config/.env.production", "deploy.pem"} {
		out := w.refused("write_file", map[string]any{"path": p, "content": "SECRET=1\n"})
		mustContain(t, "write_file "+p, out, "rule deny-pattern")
	}
	status := w.call("git_status", nil)
	mustContain(t, "git_status", status, "base: "+initial[:7], "staged: nothing", "unstaged (2):", "+ reports/q3.md", "M docs/guide.md")
	for _, leaked := range []string{"sqlite", ".env", "scratch", "pem"} {
		if strings.Contains(status, leaked) {
			t.Errorf("git_status shows %q, which was refused or rolled back:\n%s", leaked, status)
		}
	}

	// Stage the first commit.
	staged := w.call("git_stage", map[string]any{"message": "Add the Q3 report\n\nAnd a third step in the guide."})
	mustContain(t, "git_stage", staged, `"Add the Q3 report"`, "+ reports/q3.md", "M docs/guide.md")
	first := strings.Fields(staged)[1]
	mustContain(t, "git_diff", w.call("git_diff", map[string]any{"commit_id": first}),
		"+Costs fell 2%.", "+Step three.", "diff --git a/reports/q3.md b/reports/q3.md")

	// The reviewer, at a terminal: one long-running `airlock review` for
	// both decisions, as a person would keep it open.
	rv := startReview(t, bin, env, root)
	scr := rv.Screen
	at := scr.WaitFor(t, 0, "waiting for pushes", 10*time.Second)

	// Push 1: the worker asks while the person watches; they read the
	// prompt and approve.
	push1 := w.pushAsync(map[string]any{"commit_id": first})
	at = scr.WaitFor(t, at, `from worker "e2e-writer"`, 20*time.Second)
	at = scr.WaitFor(t, at, "[?]help", 10*time.Second)
	prompt1 := scr.String()[:at]
	mustContain(t, "the first prompt", prompt1[strings.LastIndex(prompt1, "Request "):],
		"Target: local:"+repo+" (branch: agent)",
		"Base:   "+initial[:7],
		"Commit: "+first+` "Add the Q3 report"`,
		"+ reports/q3.md", "M docs/guide.md", "[d]iff", "[a]pprove", "[r]eject")
	rv.Press(t, "a")
	if got, pos := scr.WaitForAny(t, at, 10*time.Second, "Type yes to approve anyway", "Approved; the push goes ahead."); got != "Approved; the push goes ahead." {
		rv.Press(t, "yes\r")
		scr.WaitFor(t, pos, "Approved; the push goes ahead.", 10*time.Second)
	}
	r1 := awaitPush(t, push1, scr)
	if r1.isErr {
		t.Fatalf("the approved git_push failed: %s", r1.text)
	}
	mustContain(t, "the approved git_push", r1.text, "pushed ", "local:"+repo, "(agent)", "2 files")

	// The repository has exactly the approved commit on agent, on top of
	// the initial one, with the files the sandbox never saw intact.
	log := mustGit(t, env, repo, "log", "--format=%H %an <%ae> %s", "agent")
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], initial+" ") ||
		!strings.HasSuffix(lines[0], " E2E Writer <e2e-writer@example.com> Add the Q3 report") {
		t.Fatalf("git log agent:\n%s", log)
	}
	pushed := strings.Fields(lines[0])[0]
	if !strings.Contains(r1.text, pushed[:7]) {
		t.Errorf("git_push said %q, but agent is at %s", r1.text, pushed)
	}
	if got := mustGit(t, env, repo, "rev-parse", pushed+"^"); strings.TrimSpace(got) != initial {
		t.Errorf("the pushed commit's parent is %s, want %s", got, initial)
	}
	if got := mustGit(t, env, repo, "show", "agent:reports/q3.md"); got != "# Q3 report\n\nRevenue grew 15%.\nCosts fell 2%.\n" {
		t.Errorf("agent:reports/q3.md = %q", got)
	}
	if got := mustGit(t, env, repo, "show", "agent:docs/guide.md"); got != "# Guide\n\nStep one.\nStep two.\nStep three.\n" {
		t.Errorf("agent:docs/guide.md = %q", got)
	}
	for _, p := range []string{"README.md", "docs/data.sqlite", "src/main.go", "docs/nested/a.txt"} {
		if got := mustGit(t, env, repo, "show", "agent:"+p); got != files[p] {
			t.Errorf("agent:%s = %q, want it untouched: %q", p, got, files[p])
		}
	}
	changed := strings.Fields(mustGit(t, env, repo, "diff-tree", "--no-commit-id", "--name-only", "-r", initial, pushed))
	if strings.Join(changed, " ") != "docs/guide.md reports/q3.md" {
		t.Errorf("the pushed commit changes %v, want docs/guide.md and reports/q3.md", changed)
	}
	if typ := strings.TrimSpace(mustGit(t, env, repo, "cat-file", "-t", pushed)); typ != "commit" {
		t.Errorf("%s is a %s", pushed, typ)
	}
	if got := strings.TrimSpace(mustGit(t, env, repo, "rev-parse", "main")); got != initial {
		t.Errorf("main moved to %s", got)
	}
	if st := mustGit(t, env, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the repository's working tree changed:\n%s", st)
	}
	mustContain(t, "git_status after the push", w.call("git_status", nil), "staged: nothing", "unstaged: nothing")

	// Push 2: the person rejects it, with a reason the worker is told.
	w.call("write_file", map[string]any{"path": "reports/q4.md", "content": "# Q4 forecast\n\nRevenue will double.\n"})
	w.call("edit_file", map[string]any{"path": "reports/q3.md", "old_text": "Costs fell 2%.", "new_text": "Costs fell 20%."})
	staged = w.call("git_stage", map[string]any{"message": "Add the Q4 forecast"})
	second := strings.Fields(staged)[1]
	push2 := w.pushAsync(map[string]any{})
	waitPending(t, w, "Add the Q4 forecast")
	at = scr.WaitFor(t, at, "Commit: "+second+` "Add the Q4 forecast"`, 20*time.Second)
	at = scr.WaitFor(t, at, "[?]help", 10*time.Second)
	prompt2 := scr.String()[:at]
	mustContain(t, "the second prompt", prompt2[strings.LastIndex(prompt2, "Request "):],
		"Base:   "+pushed[:7], "+ reports/q4.md", "M reports/q3.md")
	rv.Press(t, "r")
	at = scr.WaitFor(t, at, "Reason", 10*time.Second)
	const reason = "the forecast needs finance sign-off"
	rv.Press(t, reason+"\r")
	scr.WaitFor(t, at, "Rejected; the worker is told", 10*time.Second)
	r2 := awaitPush(t, push2, scr)
	if !r2.isErr {
		t.Fatalf("the rejected git_push did not fail: %s", r2.text)
	}
	// The person is done: Ctrl-C ends the reviewer cleanly.
	rv.Press(t, "\x03")
	if code := rv.Wait(t, 10*time.Second); code != 0 {
		t.Errorf("airlock review exited %d after Ctrl-C\n%s", code, scr.String())
	}
	mustContain(t, "the rejected git_push", r2.text, reason, "rejected")
	if strings.Contains(r2.text, "pushed ") {
		t.Errorf("the rejected git_push says it pushed: %s", r2.text)
	}
	mustContain(t, "git_status after the rejection", w.call("git_status", nil), second, "Add the Q4 forecast")

	// Nothing of the rejected change reached the repository.
	if got := strings.TrimSpace(mustGit(t, env, repo, "rev-parse", "agent")); got != pushed {
		t.Errorf("agent moved to %s after a rejection; want %s", got, pushed)
	}
	if _, err := gitOut(t, env, repo, "cat-file", "-e", "agent:reports/q4.md"); err == nil {
		t.Errorf("the rejected reports/q4.md is on agent")
	}
	if got := mustGit(t, env, repo, "show", "agent:reports/q3.md"); strings.Contains(got, "20%") {
		t.Errorf("the rejected edit is on agent: %q", got)
	}
	if out, err := gitOut(t, env, repo, "rev-parse", "--verify", "--quiet", second+"^{commit}"); err == nil {
		t.Errorf("the rejected commit %s is in the repository (%s)", second, strings.TrimSpace(out))
	}
	// Beside the branches, the one ref that keeps the ledger's head.
	all := mustGit(t, env, repo, "for-each-ref", "--format=%(refname)")
	if ok, _ := regexp.MatchString(`^refs/airlock/ledger/[0-9a-f]{16}\nrefs/heads/agent\nrefs/heads/main$`, strings.TrimSpace(all)); !ok {
		t.Errorf("the repository's refs are:\n%s", all)
	}
	if out, err := gitOut(t, env, repo, "fsck", "--strict", "--no-dangling"); err != nil {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}

	// The worker leaves: the server exits cleanly.
	closed = true
	if err := cs.Close(); err != nil {
		t.Errorf("airlock serve did not exit cleanly: %v\n%s", err, serveErr.String())
	}

	// The ledger has every request and decision, and its chain holds.
	verify := exec.Command(bin, "ledger", "verify")
	verify.Env = env
	out, err := verify.CombinedOutput()
	if err != nil {
		t.Fatalf("airlock ledger verify: %v\n%s", err, out)
	}
	mustContain(t, "ledger verify", string(out), filepath.Join(root, "state", "airlock", "ledger.jsonl"), "chain intact")
	mustContain(t, "ledger verify", string(out), "checked against local:"+repo)
	var records int
	if i := strings.Index(string(out), ".jsonl: "); i < 0 {
		t.Errorf("ledger verify said %q", out)
	} else if _, err := fmt.Sscanf(string(out)[i+8:], "%d records", &records); err != nil || records < 5 {
		t.Errorf("ledger verify said %q; want at least 5 records (2 requests, 2 decisions, 1 push)", out)
	}
	show := exec.Command(bin, "ledger", "show")
	show.Env = env
	out, err = show.CombinedOutput()
	if err != nil {
		t.Fatalf("airlock ledger show: %v\n%s", err, out)
	}
	// The decider is the OS user of the reviewer's process, as the kernel
	// names it on the socket.
	me, _ := user.Current()
	mustContain(t, "ledger show", string(out), "e2e-writer asks to push "+first, "e2e-writer asks to push "+second, "push approved by "+me.Username+" (pid ", "pushed "+pushed[:7],
		fmt.Sprintf("push rejected by %s (pid ", me.Username), fmt.Sprintf("(%q)", reason))

	// A ledger someone edited is caught: exit 3.
	data, err := os.ReadFile(ledgerFile)
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(data, []byte(reason), []byte("approved after all, really"), 1)
	if bytes.Equal(tampered, data) {
		t.Fatalf("the ledger does not hold the reason %q", reason)
	}
	tamperedFile := filepath.Join(root, "tampered.jsonl")
	if err := os.WriteFile(tamperedFile, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	verify = exec.Command(bin, "ledger", "verify", "--file", tamperedFile)
	verify.Env = env
	out, err = verify.CombinedOutput()
	if code := ptytest.ExitCode(err); code != 3 {
		t.Errorf("ledger verify of a tampered ledger exited %d, want 3:\n%s", code, out)
	}
}

// airlock review needs a person: without a terminal it exits 4; in one,
// with nothing to review, Ctrl-C ends it without an error.
func TestReviewTerminal(t *testing.T) {
	root := t.TempDir()
	env := isolatedEnv(t, root)
	out, errOut, code := runAirlock(t, env, root, "review")
	if code != 4 {
		t.Fatalf("airlock review without a terminal exited %d, want 4\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	mustContain(t, "airlock review without a terminal", errOut, "runs only in a terminal")

	rv := startReview(t, airlockBinary(t), env, root)
	rv.Screen.WaitFor(t, 0, "no airlock server is running yet", 10*time.Second)
	rv.Press(t, "\x03")
	if code := rv.Wait(t, 10*time.Second); code != 0 {
		t.Errorf("airlock review exited %d after Ctrl-C", code)
	}
}
