package review_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/internal/ptytest"
)

// TestPickHunksInPseudoTerminal: a reviewer at a real terminal picks 3
// hunks of a real 2-commit push, one of them in part, edits a message,
// and confirms the summary; the decision names exactly those hunks.
func TestPickHunksInPseudoTerminal(t *testing.T) {
	r := hunkRequest(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "request.json"), filepath.Join(dir, "decision.json")
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPickChild$")
	cmd.Env = append(os.Environ(), "AIRLOCK_PICK_CHILD="+in, "AIRLOCK_PICK_OUT="+out, "PAGER=cat", "TERM=xterm")
	p := ptytest.Start(t, cmd)
	scr := p.Screen
	const within = 10 * time.Second
	at := 0
	step := func(wait, keys string) {
		t.Helper()
		at = scr.WaitFor(t, at, wait, within)
		p.Press(t, keys)
	}
	step("[p]ick hunks", "p")
	step("(1/2) Accept this hunk of a.go", "y")
	step("(2/2) Accept this hunk of a.go", "s")
	step("line 1/3: accept", "y")
	step("line 2/3: accept", "n")
	step("line 3/3: accept", "y")
	step("Accept this hunk of notes^[[2J<U+202E>txt.sh^Jfake", "e")
	step("New subject", "Add the limits, reviewed\r")
	step("The body: [k]eep it, [r]eplace it, [d]rop it?", "k")
	step("Accept this hunk of notes^[[2J<U+202E>txt.sh^Jfake", "n")
	step("(1/1) Accept this hunk of README.md", "y")
	step("(1/1) Accept this hunk of a.go", "d")
	// The pick leaves out the only high risks (the worker's message, the
	// deceptive file): no yes is asked.
	step("Push 2 commits?", "y")
	if code := p.Wait(t, within); code != 0 {
		t.Fatalf("the prompt exited %d", code)
	}
	for _, want := range []string{`lands as commit 1, with your message "Add the limits, reviewed" (was "Add the limits^[[1A^[[2K<U+202E>"), its body kept (1 line)`, "a.go: 2 of 2 hunks, 1 of them in part", "Stays in the sandbox, not pushed:"} {
		if !strings.Contains(scr.String(), want) {
			t.Errorf("the screen lacks %q", want)
		}
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var d approval.Decision
	if err := json.Unmarshal(got, &d); err != nil {
		t.Fatal(err)
	}
	want := []approval.Accepted{
		{Commit: r.Commits[0].ID, Message: "Add the limits, reviewed\n\nWith a body.\n", Files: []approval.AcceptedFile{
			{Path: "a.go", Hunks: []approval.AcceptedHunk{accepted(r, 0, 0, 0), accepted(r, 0, 0, 1, 0, 2)}}}},
		{Commit: r.Commits[1].ID, Files: []approval.AcceptedFile{{Path: "README.md", Hunks: []approval.AcceptedHunk{accepted(r, 1, 0, 0)}}}},
	}
	if d.Verdict != approval.Pick || !reflect.DeepEqual(d.Accept, want) {
		t.Errorf("decision %+v\nwant accept %+v", d, want)
	}
}

// childRequest is, in a test run as a child in a pseudo-terminal, the
// request written to the file env names, and the terminal; a test run
// otherwise is skipped (runner says which test runs it).
func childRequest(t *testing.T, env, runner string) (*approval.Request, *review.TTY) {
	t.Helper()
	in := os.Getenv(env)
	if in == "" {
		t.Skip("run by " + runner)
	}
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	var r approval.Request
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	tty, err := review.OpenTTY()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return &r, tty
}

func TestPickChild(t *testing.T) {
	r, tty := childRequest(t, "AIRLOCK_PICK_CHILD", "TestPickHunksInPseudoTerminal")
	d, err := review.Prompt(tty, r)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(d)
	if err := os.WriteFile(os.Getenv("AIRLOCK_PICK_OUT"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReviewLoopInPseudoTerminal: in a real terminal, l goes to the list
// from a request shown directly after a second one arrives; and a
// re-review after one comment is labelled, shows only the interdiff, and
// is approved in at most 3 keys.
func TestReviewLoopInPseudoTerminal(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, 1001, "writer")
	first := a.submit(t, "writer", "sess", "", "first", "", nil)
	cmd := exec.Command(os.Args[0], "-test.run=^TestReviewListChild$")
	cmd.Env = append(os.Environ(), "AIRLOCK_REVIEW_CHILD="+dir, "PAGER=cat", "TERM=xterm")
	p := ptytest.Start(t, cmd)
	scr := p.Screen
	const within = 10 * time.Second
	at := scr.WaitFor(t, 0, "(branch: first)", within)
	at = scr.WaitFor(t, at, "[l]ist", within)
	second := a.submit(t, "writer", "sess", "", "second", "", nil)
	time.Sleep(200 * time.Millisecond) // the second request reaches the reviewer while the first is shown
	p.Press(t, "l")
	at = scr.WaitFor(t, at, "2 requests are waiting:", within)
	at = scr.WaitFor(t, at, "Review which?", within)
	p.Press(t, "2\r")
	at = scr.WaitFor(t, at, "(branch: second)", within)
	at = scr.WaitFor(t, at, "[?]help", within)
	p.Press(t, "r")
	at = scr.WaitFor(t, at, "Reason", within)
	p.Press(t, "later\r")
	at = scr.WaitFor(t, at, "Rejected; the worker is told", within)
	if got := outcome(t, second); got != "rejected" {
		t.Fatalf("the second request was %s", got)
	}
	at = scr.WaitFor(t, at, "(branch: first)", within)
	at = scr.WaitFor(t, at, "[?]help", within)
	p.Press(t, "a")
	at = scr.WaitFor(t, at, "Approved; the push goes ahead.", within)
	if got := outcome(t, first); got != "approved" {
		t.Fatalf("the first request was %s", got)
	}

	// The worker answers a comment and pushes again.
	again := a.submit(t, "writer", "sess", "", "again", "", func(r *approval.Request) {
		r.Since = &approval.Since{Request: "req-earlier", Why: "you asked for changes", Comments: []approval.Comment{{Path: "report.md", Line: 3, Text: "say which quarter"}},
			Reply: "it says Q3 now", Interdiff: "diff --git a/report.md b/report.md\n--- a/report.md\n+++ b/report.md\n@@ -3 +3 @@\n-# Report\n+# Report for Q3\n"}
	})
	at = scr.WaitFor(t, at, "Asked again: you saw request req-earlier; you asked for changes.", within)
	at = scr.WaitFor(t, at, "[?]help", within)
	if s := scr.String()[max(0, at-2000):]; !strings.Contains(s, "report.md:3  say which quarter") || !strings.Contains(s, `The worker replied: "it says Q3 now"`) {
		t.Errorf("the re-review does not say what was said:\n%s", s)
	}
	keys := 0
	press := func(k string) { keys++; p.Press(t, k) }
	// d opens the interdiff full screen, q comes back, a approves.
	press("d")
	at = scr.WaitFor(t, at, "+# Report for Q3", within)
	press("q")
	at = scr.WaitFor(t, at, "[?]help", within)
	press("a")
	scr.WaitFor(t, at, "Approved; the push goes ahead.", within)
	if got := outcome(t, again); got != "approved" || keys > 3 {
		t.Fatalf("the re-review was %s after %d keys", got, keys)
	}
	p.Press(t, "\x03")
	if code := p.Wait(t, within); code != 0 {
		t.Fatalf("the reviewer exited %d", code)
	}
}
