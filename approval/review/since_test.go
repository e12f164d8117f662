package review_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
)

const interdiff = "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -20,2 +20,2 @@\n-line 20 changd\n+line 20 changed\n line 21\n"

// rereviewRequest follows one the reviewer asked changes of, with hostile
// text in everything the worker or the server said, on a new branch
// forked from main.
func rereviewRequest(t *testing.T) *approval.Request {
	r := hunkRequest(t)
	r.NewRef, r.Old = true, plumbing.ZeroHash
	r.Fork, r.ForkRef = approvaltest.Hash("fork"), "refs/heads/main\x1b[8m"
	r.Since = &approval.Since{
		Request: "req-old\x1b[2J", Why: "you asked for changes\u202E", Tree: approvaltest.Hash("old-tree"),
		Reason:    "rename it\x1b]52;c;ZXZpbA==\x07",
		Comments:  []approval.Comment{{Path: "a.go", Line: 20, Text: "typo\nhere\x1b[1A"}, {Text: "add a test"}},
		Reply:     "Fixed the typo;\nadded\x1b[8m a test",
		Interdiff: interdiff,
	}
	r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	return r
}

// TestRereviewGolden: a request that follows one the reviewer saw says so
// first (what they said then, the worker's reply, how much changed), and a
// new branch names what it is diffed against.
func TestRereviewGolden(t *testing.T) {
	r := rereviewRequest(t)
	for _, color := range []bool{false, true} {
		var b strings.Builder
		if err := review.Render(&b, r, color); err != nil {
			t.Fatal(err)
		}
		assertOnlyOwnEscapes(t, b.String())
		if !color {
			checkGolden(t, "prompt/rereview.golden", screen(t, b.String()))
		}
	}
}

// TestRereviewKeys: d shows what changed since, f the full diff, and
// approving takes one key (and a typed yes: the fixture's message hides
// characters, a high risk).
func TestRereviewKeys(t *testing.T) {
	r := rereviewRequest(t)
	s := &approvaltest.Script{Keys: []rune("dfDa"), Lines: []string{"yes"}, TTY: true}
	d, err := review.Prompt(s, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := (approval.Decision{Request: r.ID, Verdict: approval.Approve, By: "reviewer"}); !reflect.DeepEqual(d, want) {
		t.Errorf("decision %+v, want %+v", d, want)
	}
	if len(s.Paged) != 3 || !strings.Contains(s.Paged[0], "-line 20 changd") || strings.Contains(s.Paged[0], "README") ||
		!strings.Contains(s.Paged[1], "+They are documented.") || s.Paged[2] != s.Paged[1] {
		t.Errorf("paged %q", s.Paged)
	}
	if !strings.Contains(s.Out.String(), "[d]iff since  [f]ull  [a]pprove") {
		t.Errorf("the keys:\n%s", s.Out.String())
	}
	// Many comments then: the summary lists five, ? all of them.
	r.Since.Comments = nil
	for i := 1; i <= 8; i++ {
		r.Since.Comments = append(r.Since.Comments, approval.Comment{Path: "a.go", Line: i, Text: fmt.Sprintf("comment %d", i)})
	}
	s = &approvaltest.Script{Keys: []rune("?a"), Lines: []string{"yes"}, TTY: true}
	if _, err := review.Prompt(s, r); err != nil {
		t.Fatal(err)
	}
	summary, help, _ := strings.Cut(s.Out.String(), "  d  show the diff")
	if !strings.Contains(summary, "a.go:5  comment 5") || strings.Contains(summary, "comment 6") || !strings.Contains(summary, "... and 3 more: ? lists them all") ||
		!strings.Contains(help, "a.go:8  comment 8") {
		t.Errorf("the comments then:\n%s", s.Out.String())
	}

	// The same push again (the target moved): d says nothing changed.
	r.Since.Interdiff = ""
	s = &approvaltest.Script{Keys: []rune("da"), Lines: []string{"yes"}, TTY: true}
	if _, err := review.Prompt(s, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Out.String(), "Since then: nothing changed in what the push carries") || len(s.Paged) != 1 || !strings.Contains(s.Paged[0], "Nothing changed") {
		t.Errorf("the same push again:\n%s\npaged %q", s.Out.String(), s.Paged)
	}
}
