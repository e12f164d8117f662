package review_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/hinshun/vt10x"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/ptytest"
)

// screen80x24 plays the bytes up to and including the last occurrence of
// upTo into an 80x24 terminal emulator and returns what it shows.
func screen80x24(t *testing.T, out, upTo string) string {
	t.Helper()
	i := strings.LastIndex(out, upTo)
	if i < 0 {
		t.Fatalf("the output never shows %q:\n%s", upTo, out)
	}
	vt := vt10x.New(vt10x.WithSize(80, 24))
	if _, err := vt.Write([]byte(strings.ReplaceAll(out[:i+len(upTo)], "\n", "\r\n"))); err != nil {
		t.Fatal(err)
	}
	return vt.String()
}

// stamp is a time of day on the screen, which a golden file cannot hold.
var stamp = regexp.MustCompile(`\d\d:\d\d:\d\d`)

// matchGolden compares a screen with testdata/small/name.golden.
func matchGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", "small", name+".golden")
	if *update {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("the screen differs from %s:\n%s", golden, got)
	}
}

// busyRequest is a push asked again, of a session and a repository with
// long names, with 40 files and every key the prompt has.
func busyRequest(r *approval.Request) {
	r.Files = nil
	for i := 0; i < 40; i++ {
		r.Files = append(r.Files, approval.FileChange{Path: fmt.Sprintf("internal/generated/file%02d.go", i), Op: change.Update, OldMode: filemode.Regular, NewMode: filemode.Regular, Size: 100})
	}
	r.Files = append(r.Files, approval.FileChange{Path: ".github/workflows/release.yml", Op: change.Create, NewMode: filemode.Regular, Size: 10})
	r.Commits = []approval.CommitInfo{{ID: approvaltest.Hash("c1"), Message: "one\n\n" + strings.Repeat("a long body line\n", 12)}, {ID: approvaltest.Hash("c2"), Message: "two"}}
	r.Pickable = true
	r.Since = &approval.Since{Request: "req-000000000009", Why: "you left it out of your pick", Tree: approvaltest.Hash("seen")}
	r.Flags = approval.Assess(r, approval.Rules{}, nil)
}

// Issue 33: at 80x24 every screen's header and keys are whole on the
// screen: the prompt of a busy push asked again (its header, which says
// it is asked again and why, and the line of keys), the list, and the
// network prompt.
func TestEveryScreenFits80x24(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, 4194304, "writer-with-a-long-name")
	req := approvaltest.SampleRequest()
	req.Worker, req.Session, req.Repo, req.Describe = "writer-with-a-long-name", "20261128-195413-97d3b058", "services/payments-api", req.Target
	busyRequest(req)
	if _, err := a.gate.Resubmit(req, "req-000000000001", make(chan *approval.PickAsk)); err != nil {
		t.Fatal(err)
	}
	r := watch(t, dir, 1)
	s := &rowsScript{Script: approvaltest.Script{TTY: true}, rows: 24}
	if err := review.Review(context.Background(), r, s, false); err == nil {
		t.Fatal("the review went on without input")
	}
	scr := stamp.ReplaceAllString(screen80x24(t, s.Out.String(), "help"), "hh:mm:ss")
	matchGolden(t, "prompt", scr)
	rows := strings.Split(scr, "\n")
	if !strings.HasPrefix(rows[1], "Request req-000000000001 from worker") {
		t.Errorf("the header's first line is not at the screen's top:\n%s", scr)
	}
	if !strings.Contains(scr, "[?]help") || !strings.Contains(scr, "[d]iff since") {
		t.Errorf("the keys are cut:\n%s", scr)
	}
	if !strings.Contains(scr, "asked again: you left it out of your pick") {
		t.Errorf("the header does not say it is asked again, and why:\n%s", scr)
	}
}

// The list of waiting requests and a network request's prompt at 80x24:
// the list's head and its question, and the network prompt's keys, on
// lines of their own, never cut.
func TestListAndNetworkFit80x24(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, 1001, "writer")
	a.submit(t, "writer", "sess", "", "first", "req-000000000001", func(r *approval.Request) {
		r.Since = &approval.Since{Request: "req-000000000000", Why: approval.WhyUndone, Tree: approvaltest.Hash("seen")}
	})
	a.submit(t, "writer", "sess", "", "second", "req-000000000002", nil)
	r := watch(t, dir, 2)
	s := &rowsScript{Script: approvaltest.Script{TTY: true}, rows: 24}
	if err := review.Review(context.Background(), r, s, false); err == nil {
		t.Fatal("the review went on without input")
	}
	scr := screen80x24(t, s.Out.String(), "l to list again): ")
	matchGolden(t, "list", scr)
	if !strings.Contains(scr, "asked again: "+approval.WhyUndone) {
		t.Errorf("the list does not say which request is asked again, and why:\n%s", scr)
	}

	dir2 := socketDir(t)
	n := newServer(t, dir2, 2002, "runner")
	n.submit(t, "runner", "sess", "", "", "req-000000000003", func(r *approval.Request) {
		r.Kind, r.Command, r.Reason = approval.KindNetwork, "go mod download", "to fetch the modules"
		r.Reach = []string{"127.0.0.1:5000"}
	})
	r2 := watch(t, dir2, 1)
	s2 := &rowsScript{Script: approvaltest.Script{TTY: true}, rows: 24}
	if err := review.Review(context.Background(), r2, s2, false); err == nil {
		t.Fatal("the review went on without input")
	}
	scr = screen80x24(t, s2.Out.String(), "back to the list")
	matchGolden(t, "network", scr)
	for _, want := range []string{"[c] allow this command here for the session", "[l] back to the list", "lands only in the sandbox.", "the LAN or other private ranges"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the network prompt at 80x24 cuts %q:\n%s", want, scr)
		}
	}
}

// A pick's summary at 80x24: of 30 files, each list keeps its first ones
// and counts the rest, so its head, each commit's line and the question
// stay on the screen.
func TestPickSummaryFits80x24(t *testing.T) {
	r := approvaltest.SampleRequest()
	r.ID = "req-000000000004"
	r.Since = &approval.Since{Request: "req-000000000000", Why: "you rejected it", Tree: approvaltest.Hash("seen")}
	one := approval.CommitInfo{ID: approvaltest.Hash("c1"), Message: "Generate the files"}
	for i := 0; i < 30; i++ {
		p := fmt.Sprintf("gen/file%02d.go", i)
		one.Files = append(one.Files, approval.FileDiff{Path: p, Op: change.Update,
			Header: fmt.Sprintf("diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", p, p, p, p), Hunks: []string{"@@ -1 +1 @@\n-a\n+b\n"}})
	}
	two := approval.CommitInfo{ID: approvaltest.Hash("c2"), Message: "Document them", Files: []approval.FileDiff{{Path: "README.md", Op: change.Update,
		Header: "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n", Hunks: []string{"@@ -1 +1 @@\n-a\n+b\n"}}}}
	r.Commits, r.Pickable = []approval.CommitInfo{one, two}, true
	keys := "p" + strings.Repeat("y", 15) + strings.Repeat("n", 15) + "y" + "n"
	s := &rowsScript{Script: approvaltest.Script{Keys: []rune(keys), TTY: true}, rows: 24}
	if _, err := review.Prompt(s, r); err == nil {
		t.Fatal("the prompt went on without input")
	}
	scr := screen80x24(t, s.Out.String(), "back to the prompt  ")
	matchGolden(t, "pick-summary", scr)
	for _, want := range []string{"What you picked of request req-000000000004 (asked again: you rejected it):", "lands as commit 1", "lands as commit 2", "Stays in the sandbox", "Push 2 commits?"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the summary at 80x24 lacks %q:\n%s", want, scr)
		}
	}
}

// The same busy prompt in a real 80x24 terminal (a pseudo-terminal, its
// size read by the TTY): the header's first line and the keys are whole
// on the screen.
func TestPromptFits80x24InPseudoTerminal(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, 4194304, "writer-with-a-long-name")
	req := approvaltest.SampleRequest()
	req.Worker, req.Session, req.Repo, req.Describe = "writer-with-a-long-name", "20261128-195413-97d3b058", "services/payments-api", req.Target
	busyRequest(req)
	if _, err := a.gate.Resubmit(req, "req-000000000001", make(chan *approval.PickAsk)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReviewListChild$")
	cmd.Env = append(os.Environ(), "AIRLOCK_REVIEW_CHILD="+dir, "PAGER=cat", "TERM=xterm")
	p := ptytest.StartSize(t, cmd, 24, 80)
	p.Screen.WaitFor(t, 0, "[?]help", 10*time.Second)
	time.Sleep(100 * time.Millisecond) // the rest of the line
	scr := screen80x24(t, p.Screen.String(), "[?]help")
	for _, want := range []string{"Request req-000000000001 from worker", "asked again: you left it out of your pick:", "[d]iff since", "[?]help", "more files: [d]iff shows them all"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the 80x24 terminal does not show %q whole:\n%s", want, scr)
		}
	}
}
