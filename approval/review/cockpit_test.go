package review_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/approval/review/internal/viewtest"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/internal/hunk"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

// decided waits for the child's decision and returns it whole.
func (v *viewTerm) decided() approval.Decision {
	v.t.Helper()
	v.decision()
	_, after, ok := strings.Cut(v.output(), "DECIDED: ")
	line, _, _ := strings.Cut(after, "\n")
	var d approval.Decision
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &d); !ok || err != nil {
		v.t.Fatalf("no decision from the child (%v):\n%s", err, v.output())
	}
	return d
}

// linesNumbered is lines 1 to n, "line N", with edits by number ("" deletes).
func linesNumbered(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		l, ok := edit[i]
		if !ok {
			l = "line " + strconv.Itoa(i)
		} else if l == "" {
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// TestViewCommentsWithoutNumbers: in the full-screen view the reviewer
// comments on a deleted line (its old side), on a range of three lines
// marked with v, and on a third line, all with the cursor and no number
// typed; then, in the comments list, edits the range's text and deletes
// the third. The decision carries the two, with their sides and range.
func TestViewCommentsWithoutNumbers(t *testing.T) {
	base := map[string]string{"a.go": linesNumbered(14, nil)}
	push := map[string]string{"a.go": linesNumbered(14, map[int]string{3: "", 8: "line 8 changed"})}
	v := startView(t, viewtest.GitPush(t, base, push), 80, 24)
	v.waitFor("[?]help")
	v.press("d")
	v.waitFor("No file flagged")
	v.press("/line 3\r")
	v.waitFor(`found "line 3"`)
	v.press("c")
	v.waitFor("Comment on a.go:3 (old side)")
	v.press("why delete line 3?\r")
	v.waitFor("comment added")
	v.press("/line 9\r")
	v.waitFor(`found "line 9"`)
	v.press("vjj")
	v.press("c")
	v.waitFor("Comment on a.go:8-10")
	v.press("range note\r")
	v.waitFor("comment added")
	v.press("g/line 2\r")
	v.waitFor(`found "line 2"`)
	v.press("cdrop me\r")
	v.waitFor("comment added")
	v.press("gJ")
	v.golden("comments", "3 comments")
	v.press("C")
	v.golden("comments-list", "Your comments (3)")
	v.press("je\x15tighten this range\r")
	v.waitFor("comment changed")
	v.press("jd")
	v.golden("comments-edited", "comment deleted")
	v.press("qq")
	v.waitFor("[?]help")
	v.press("r")
	v.waitFor("Reason")
	v.press("\r")
	d := v.decided()
	want := []approval.Comment{
		{Path: "a.go", Line: 3, Side: approval.SideOld, Text: "why delete line 3?"},
		{Path: "a.go", Line: 8, EndLine: 10, Text: "tighten this range"},
	}
	if d.Verdict != approval.Reject || !reflect.DeepEqual(d.Comments, want) {
		t.Errorf("decision %s with comments\n%+v\nwant\n%+v", d.Verdict, d.Comments, want)
	}
	assertOnlyViewEscapes(t, v.output())
}

// TestViewViewedMarksSurviveAReReview: the reviewer marks a.go viewed
// and rejects; the worker's next request of the same change keeps a.go
// as it was and changes b.go again: a.go is still marked, b.go is not.
func TestViewViewedMarksSurviveAReReview(t *testing.T) {
	state := t.TempDir()
	base := map[string]string{"a.go": linesNumbered(5, nil), "b.go": linesNumbered(5, nil)}
	first := map[string]string{"a.go": linesNumbered(5, map[int]string{2: "two"}), "b.go": linesNumbered(5, map[int]string{4: "four"})}
	v := startView(t, viewtest.GitPush(t, base, first), 80, 24, "AIRLOCK_STATE_DIR="+state)
	v.waitFor("[?]help")
	v.press("d")
	v.waitFor("No file flagged")
	v.press("m")
	v.waitFor("1 viewed")
	v.press("f")
	v.golden("viewed-first", "Enter go")
	v.press("qq")
	v.reject()

	again := map[string]string{"a.go": first["a.go"], "b.go": linesNumbered(5, map[int]string{4: "FOUR"})}
	v = startView(t, viewtest.GitPush(t, base, again), 80, 24, "AIRLOCK_STATE_DIR="+state)
	v.waitFor("[?]help")
	v.press("d")
	v.waitFor("1 viewed")
	v.press("f")
	v.golden("viewed-again", "Enter go")
	v.press("qq")
	v.reject()
}

// pushingSession is a real session whose worker pushed one commit: two
// hunks of a.go and a procfile (a CI flag), waiting at the gate.
func pushingSession(t *testing.T) (req *approval.Request, gate *approval.Gate, done chan error, src, bare string) {
	t.Helper()
	src = t.TempDir()
	gittest.InitRepo(t, gittest.Env(), src, "init", map[string]string{"a.go": linesNumbered(30, nil)})
	bare = filepath.Join(t.TempDir(), "project.git")
	gittest.Git(t, src, "clone", "-q", "--bare", src, bare)
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}, Targets: map[string]*worker.TargetSpec{},
		AutoPull: []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}}},
	}
	gate = approval.NewGate(approvaltest.NewLedger(t), approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys})
	s, err := session.New(context.Background(), w, session.Options{Gate: gate, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	call := func(tool string, args map[string]any) {
		t.Helper()
		raw, _ := json.Marshal(args)
		if _, err := gittools.Call(context.Background(), s, tool, raw, nil); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
	call("write_file", map[string]any{"path": "a.go", "content": linesNumbered(30, map[int]string{3: "line 3 changed", 25: "line 25 changed"})})
	call("write_file", map[string]any{"path": "zz/procfile", "content": "web: ./serve\n"})
	call("git_stage", map[string]any{"message": "Serve it"})
	done = make(chan error, 1)
	go func() {
		_, err := gittools.Call(context.Background(), s, "git_push", json.RawMessage(`{}`), nil)
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); req == nil; time.Sleep(5 * time.Millisecond) {
		if p := gate.Pending(); len(p) == 1 {
			req = p[0]
		} else if time.Now().After(deadline) {
			t.Fatal("no request came")
		}
	}
	return req, gate, done, src, bare
}

// TestViewPickLandsAsGitApply: the risky file (the procfile, after a.go in
// the push's order) is shown first and its hunk is the first J reaches;
// the reviewer accepts it and a.go's first hunk and leaves out a.go's
// second from the view, approves there, confirms the summary: the
// decision accepts exactly those hunks, and what lands is git apply
// --cached of them.
func TestViewPickLandsAsGitApply(t *testing.T) {
	req, gate, done, src, bare := pushingSession(t)
	v := startView(t, req, 80, 24)
	v.waitFor("[?]help")
	v.press("d")
	v.waitFor("Risk first")
	v.press("J")
	v.waitFor("+web: ./serve")
	if !strings.Contains(v.screen(), ">") || !strings.Contains(v.screen(), "procfile") {
		t.Fatalf("the first hunk is not the risky file's:\n%s", v.screen())
	}
	v.press("yyx")
	v.golden("pick", "the hunk left out")
	v.press("a")
	v.waitFor("Push 1 commit?")
	v.press("y")
	time.Sleep(200 * time.Millisecond)
	if strings.Contains(v.screen(), "Type yes") {
		v.press("yes\r")
	}
	d := v.decided()
	c := req.Commits[0]
	var aGo, proc approval.FileDiff
	for _, fd := range c.Files {
		switch fd.Path {
		case "a.go":
			aGo = fd
		case "zz/procfile":
			proc = fd
		}
	}
	want := []approval.Accepted{{Commit: c.ID, Files: []approval.AcceptedFile{
		{Path: "a.go", Hunks: []approval.AcceptedHunk{{Index: 0, ID: approval.HunkID(aGo.Hunks[0])}}},
		{Path: "zz/procfile", Hunks: []approval.AcceptedHunk{{Index: 0, ID: approval.HunkID(proc.Hunks[0])}}},
	}}}
	if d.Verdict != approval.Pick || !reflect.DeepEqual(d.Accept, want) {
		t.Fatalf("decision %s accepting\n%+v\nwant\n%+v", d.Verdict, d.Accept, want)
	}
	d.Request = req.ID
	if _, err := gate.Resolve(d); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(gittest.Git(t, bare, "log", "-1", "--format=%T", "main")), appliedTree(t, src, c, d.Accept[0]); got != want {
		t.Errorf("landed tree %s, git apply --cached of what was accepted makes %s", got, want)
	}
}

// appliedTree is the tree git apply --cached makes of what acc accepts of
// commit c, on a clone of src.
func appliedTree(t *testing.T, src string, c approval.CommitInfo, acc approval.Accepted) string {
	t.Helper()
	clone := t.TempDir()
	gittest.Git(t, clone, "clone", "-q", src, ".")
	var patch strings.Builder
	for _, af := range acc.Files {
		for _, fd := range c.Files {
			if fd.Path != af.Path {
				continue
			}
			patch.WriteString(fd.Header)
			for _, ah := range af.Hunks {
				text := fd.Hunks[ah.Index]
				if len(ah.Lines) > 0 {
					var err error
					if text, err = hunk.Select(text, ah.Lines); err != nil {
						t.Fatal(err)
					}
				}
				patch.WriteString(text)
			}
		}
	}
	pf := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(pf, []byte(patch.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "apply", "--cached", pf)
	cmd.Dir, cmd.Env = clone, gittest.Env()
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v: %s\n%s", err, msg, patch.String())
	}
	return strings.TrimSpace(gittest.Git(t, clone, "write-tree"))
}

// TestViewHeaderSaysWhatIsShown: a re-review's d shows what changed since
// the reviewer's last look, and the header says so; f shows the whole
// push, and the header says that; nothing can be picked from the
// interdiff.
func TestViewHeaderSaysWhatIsShown(t *testing.T) {
	base := map[string]string{"a.go": linesNumbered(5, nil)}
	r := viewtest.GitPush(t, base, map[string]string{"a.go": linesNumbered(5, map[int]string{2: "two"})})
	r.Since = &approval.Since{Request: "req-seen", Why: "you rejected it", Interdiff: "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1,3 +1,3 @@\n line 1\n-TWO\n+two\n line 3\n"}
	v := startView(t, r, 80, 24)
	v.waitFor("[?]help")
	v.press("d")
	v.waitFor("Interdiff since request req-seen")
	v.press("Jx")
	v.golden("interdiff", "no pick from an interdiff: q, then f")
	v.press("q")
	v.waitFor("[?]help")
	v.press("f")
	v.waitFor(" Whole push: 1 file +1 -1")
	v.press("q")
	v.waitFor("[?]help")
	v.reject()
}

// TestViewCommitByCommitAt80x24: a push of two commits with hostile names,
// messages and content, full screen at 80x24: the header and the keys fit;
// each file's banner names its commit; the flagged file comes first, and
// J goes hunk by hunk; nothing of the worker's reaches the terminal raw.
func TestViewCommitByCommitAt80x24(t *testing.T) {
	v := startView(t, hunkRequest(t), 80, 24)
	v.waitFor("[?]help")
	// The prompt and the view count the same push in the same words: a.go,
	// changed by both commits, is one file of three (its two banners, by
	// commit, come after).
	if !strings.Contains(v.output(), "(3 files, +6 -4)") {
		t.Fatalf("the prompt does not count the push as 3 files, +6 -4:\n%s", v.output())
	}
	v.press("d")
	v.golden("commits", "commit 1/2")
	v.press("JJJx")
	v.golden("commits-picked", "the hunk left out")
	v.press("=")
	v.golden("commit-one", "Commit 1/2")
	v.press("==")
	v.waitFor(" Whole push, 2 commits: 3 files +6 -4")
	v.press("q")
	v.waitFor("[?]help")
	v.reject()
	assertOnlyViewEscapes(t, v.output())
}

// TestPickAsksTheRiskyHunksFirst: the line prompt's p walks the flagged
// file first (the procfile, after a.go in the push's order), then the
// rest; the decision names each commit's files in the commit's order, and
// the gate takes it.
func TestPickAsksTheRiskyHunksFirst(t *testing.T) {
	req, gate, done, src, bare := pushingSession(t)
	s := &approvaltest.Script{Keys: []rune("p" + "y" + "yn" + "y"), Lines: []string{"yes"}, TTY: true}
	d, err := review.Prompt(s, req)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Out.String())
	}
	out := s.Out.String()
	proc, aGo := strings.Index(out, "Accept this hunk of zz/procfile"), strings.Index(out, "Accept this hunk of a.go")
	if proc < 0 || aGo < 0 || proc > aGo {
		t.Fatalf("the flagged file's hunk was not asked first (procfile at %d, a.go at %d):\n%s", proc, aGo, out)
	}
	c := req.Commits[0]
	if d.Verdict != approval.Pick || len(d.Accept) != 1 || len(d.Accept[0].Files) != 2 || d.Accept[0].Files[0].Path != c.Files[0].Path {
		t.Fatalf("decision %+v", d)
	}
	if _, err := gate.Resolve(d); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(gittest.Git(t, bare, "log", "-1", "--format=%T", "main")), appliedTree(t, src, c, d.Accept[0]); got != want {
		t.Errorf("landed tree %s, git apply --cached of what was accepted makes %s", got, want)
	}
}

// TestViewCommentWithWhitespaceIgnored: with w, the view shows the push
// as git diff -w does, refuses to pick from it, and takes a comment,
// which is the review's after w shows everything again and goes with the
// decision.
func TestViewCommentWithWhitespaceIgnored(t *testing.T) {
	base := map[string]string{"s.go": linesNumbered(6, nil)}
	push := map[string]string{"s.go": linesNumbered(6, map[int]string{2: "  line 2", 5: "line five"})}
	v := startView(t, viewtest.GitPush(t, base, push), 80, 24)
	v.waitFor("[?]help")
	v.press("d")
	v.waitFor("No file flagged")
	v.press("w")
	v.waitFor("Whole push, whitespace ignored")
	v.press("Jx")
	v.waitFor("nothing is picked with whitespace ignored")
	v.press("/line five\r")
	v.waitFor(`found "line five"`)
	v.press("cwhy five?\r")
	v.waitFor("comment added")
	v.press("w")
	v.waitFor(" Whole push: 1 file +2 -2. No file flagged; 1 comment")
	v.press("q")
	v.waitFor("[?]help")
	v.press("r")
	v.waitFor("Reason")
	v.press("\r")
	d := v.decided()
	if want := []approval.Comment{{Path: "s.go", Line: 5, Text: "why five?"}}; !reflect.DeepEqual(d.Comments, want) {
		t.Errorf("comments %+v, want %+v", d.Comments, want)
	}
}

// TestPromptSpaceCarriesIntoTheView: w at the prompt says the diff
// ignores whitespace; d, full screen, then shows it so (it showed every
// line), and w there shows it again, to pick.
func TestPromptSpaceCarriesIntoTheView(t *testing.T) {
	base := map[string]string{"s.go": linesNumbered(6, nil)}
	push := map[string]string{"s.go": linesNumbered(6, map[int]string{2: "  line 2", 5: "line five"})}
	v := startView(t, viewtest.GitPush(t, base, push), 80, 24)
	v.waitFor("[?]help")
	v.press("w")
	v.waitFor("Whitespace is ignored in the diff")
	v.press("d")
	v.waitFor("Whole push, whitespace ignored")
	v.press("w")
	v.waitFor(" Whole push: 1 file +2 -2. No file flagged")
	v.press("q")
	v.waitFor("[?]help")
	v.reject()
}
