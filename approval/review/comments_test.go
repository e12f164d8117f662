package review_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/approval/review/internal/viewtest"
)

// TestComments: comments on a file's line (shown with the lines around
// it), on a file, and general go with the decision; a rejection with them
// asks for changes.
func TestComments(t *testing.T) {
	r := hunkRequest(t)
	cases := []struct {
		name   string
		keys   string
		lines  []string
		want   approval.Decision
		output []string
	}{
		{name: "ask for changes", keys: "ccr", lines: []string{"2", "20", "  name the limit  ", "", "and add a test", "please"},
			want: approval.Decision{Request: r.ID, Verdict: approval.Reject, Reason: "please", By: "reviewer", Comments: []approval.Comment{
				{Path: "a.go", Line: 20, Text: "name the limit"}, {Text: "and add a test"}}},
			output: []string{"> " + "   20  line 20 changed", "     19  line 19", "     23  line 22",
				"Your comments so far (2):", "a.go:20  name the limit", "(general)  and add a test",
				"[c]omment (2)", "Asking for changes with your 2 comments."}},
		{name: "approve with a comment on a file", keys: "ca", lines: []string{"9", "x", "3", "", "rename this", "yes"},
			want: approval.Decision{Request: r.ID, Verdict: approval.Approve, By: "reviewer", Comments: []approval.Comment{
				{Path: hostileName, Text: "rename this"}}},
			output: []string{`"9" is not a file number: type one from 1 to 3`, `"x" is not a file number`,
				"notes^[[2J<U+202E>txt.sh^Jfake  rename this"}},
		{name: "a line outside the diff", keys: "ca", lines: []string{"2", "0", "9", "check this", "yes"},
			want: approval.Decision{Request: r.ID, Verdict: approval.Approve, By: "reviewer", Comments: []approval.Comment{
				{Path: "a.go", Line: 9, Text: "check this"}}},
			output: []string{`"0" is not a line number`, "Line 9 of a.go is not in the diff shown"}},
		{name: "a deleted line and a range", keys: "ccr", lines: []string{"2", "5-3", "old 20", "keep line 20", "2", "3-5", "range text", ""},
			want: approval.Decision{Request: r.ID, Verdict: approval.Reject, By: "reviewer", Comments: []approval.Comment{
				{Path: "a.go", Line: 20, Side: approval.SideOld, Text: "keep line 20"}, {Path: "a.go", Line: 3, EndLine: 5, Text: "range text"}}},
			output: []string{`"5-3" is not a line number or a range`, "> " + "   20  line 20\n", "     19  line 19", "> " + "    3  line 3 changed", "> " + "    5  line 5",
				"a.go:20 (old side)  keep line 20", "a.go:3-5  range text"}},
		{name: "back without a comment", keys: "ccca", lines: []string{"q", "1", "q", "1", "2", "", "yes"},
			want:   approval.Decision{Request: r.ID, Verdict: approval.Approve, By: "reviewer"},
			output: []string{"No comment added."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &approvaltest.Script{Keys: []rune(c.keys), Lines: c.lines, TTY: true}
			got, err := review.Prompt(s, r)
			if err != nil {
				t.Fatalf("%v\noutput:\n%s", err, s.Out.String())
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("decision\n%+v\nwant\n%+v\noutput:\n%s", got, c.want, s.Out.String())
			}
			for _, o := range c.output {
				if !strings.Contains(s.Out.String(), o) {
					t.Errorf("the reviewer did not see %q:\n%s", o, s.Out.String())
				}
			}
			assertOnlyOwnEscapes(t, s.Out.String())
		})
	}
}

// The lines shown around a commented line show a tab as spaces, as the
// diff does, not as termsafe's ^I.
func TestCommentContextShowsTabsAsSpaces(t *testing.T) {
	r := viewtest.GitPush(t, map[string]string{"m.go": "func f() {\n}\n"}, map[string]string{"m.go": "func f() {\n\treturn\n}\n"})
	s := &approvaltest.Script{Keys: []rune("cr"), Lines: []string{"1", "2", "why return?", ""}, TTY: true}
	if _, err := review.Prompt(s, r); err != nil {
		t.Fatal(err)
	}
	out := s.Out.String()
	if !strings.Contains(out, "    2      return\n") || strings.Contains(out, "^I") {
		t.Errorf("the commented line is not shown with its tab as spaces:\n%s", out)
	}
}
