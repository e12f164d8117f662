package review_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/internal/change"
)

var update = flag.Bool("update", false, "rewrite golden files")

// exampleRequest is the example: three files, one binary, pushed
// to main.
func exampleRequest() *approval.Request {
	r := &approval.Request{
		ID: "req-1", Worker: "report-writer", Target: "local:/path/to/project", Describe: "local:/path/to/project",
		Ref: "refs/heads/main", Old: approvaltest.Hash("old"), New: approvaltest.Hash("new"), Tree: approvaltest.Hash("tree"),
		Commits: []approval.CommitInfo{{ID: approvaltest.Hash("new"), Message: "Add quarterly report\n\nWith charts.\n"}},
		Files: []approval.FileChange{
			{Path: "report.md", Op: change.Create, Size: 1228, NewMode: filemode.Regular, Added: 120},
			{Path: "analysis.json", Op: change.Update, Size: 820, OldMode: filemode.Regular, NewMode: filemode.Regular, Added: 22, Deleted: 38},
			{Path: "charts/revenue.svg", Op: change.Create, Size: 2150, NewMode: filemode.Regular, Binary: true},
		},
		Added: 142, Deleted: 38, Pickable: true,
		Diff: "diff --git a/report.md b/report.md\nnew file mode 100644\n--- /dev/null\n+++ b/report.md\n@@ -0,0 +1 @@\n+# Q3\n",
	}
	r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	return r
}

func chainRequest() *approval.Request {
	r := &approval.Request{
		ID: "req-2", Worker: "fixer", Target: "github:acme/site", Describe: "github:acme/site",
		Ref: "refs/heads/fix/typos", NewRef: true, New: approvaltest.Hash("c3"), Tree: approvaltest.Hash("t3"),
		Commits: []approval.CommitInfo{
			{ID: approvaltest.Hash("c1"), Message: "Fix typos in the README"},
			{ID: approvaltest.Hash("c2"), Message: "Make the deploy script executable"},
			{ID: approvaltest.Hash("c3"), Message: "Remove the old changelog"},
		},
		Files: []approval.FileChange{
			{Path: "README.md", Op: change.Update, Size: 4096, OldMode: filemode.Regular, NewMode: filemode.Regular, Added: 3, Deleted: 3},
			{Path: "scripts/deploy.sh", Op: change.Update, Size: 90, OldMode: filemode.Regular, NewMode: filemode.Executable},
			{Path: "docs/CHANGELOG.old", Op: change.Delete, Size: 30000, OldMode: filemode.Regular, Deleted: 800},
			{Path: ".github/workflows/ci.yml", Op: change.Update, Size: 700, OldMode: filemode.Regular, NewMode: filemode.Regular, Added: 1, Deleted: 1},
		},
		Added: 4, Deleted: 804,
	}
	r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	return r
}

func TestRenderGolden(t *testing.T) {
	for name, req := range map[string]*approval.Request{"example": exampleRequest(), "chain": chainRequest()} {
		for _, color := range []bool{false, true} {
			file := name
			if color {
				file += ".color"
			}
			t.Run(file, func(t *testing.T) {
				var b strings.Builder
				if err := review.Render(&b, req, color); err != nil {
					t.Fatal(err)
				}
				golden := filepath.Join("testdata", "prompt", file+".golden")
				if *update {
					os.MkdirAll(filepath.Dir(golden), 0o755)
					os.WriteFile(golden, []byte(b.String()), 0o644)
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update)", err)
				}
				if b.String() != string(want) {
					t.Errorf("render differs from %s:\n%s", golden, b.String())
				}
			})
		}
	}
}

func TestPromptKeys(t *testing.T) {
	lowRisk := func() *approval.Request {
		r := exampleRequest()
		r.Ref = "refs/heads/reports"
		r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
		return r
	}
	cases := []struct {
		name   string
		req    *approval.Request
		keys   string
		lines  []string
		want   approval.Decision
		output []string // substrings the reviewer saw
		paged  bool
	}{
		{name: "approve", req: lowRisk(), keys: "a", want: approval.Decision{Request: "req-1", Verdict: approval.Approve, By: "reviewer"}},
		{name: "reject with reason", req: lowRisk(), keys: "r", lines: []string{"  not on Fridays  "},
			want: approval.Decision{Request: "req-1", Verdict: approval.Reject, Reason: "not on Fridays", By: "reviewer"}},
		{name: "reject without reason", req: lowRisk(), keys: "r", lines: []string{""},
			want: approval.Decision{Request: "req-1", Verdict: approval.Reject, By: "reviewer"}},
		{name: "pick", req: lowRisk(), keys: "p", lines: []string{"9", "1,3"},
			want:   approval.Decision{Request: "req-1", Verdict: approval.Pick, Paths: []string{"report.md", "charts/revenue.svg"}, By: "reviewer"},
			output: []string{"1  + report.md", `"9" is not a file number`}},
		{name: "pick then back", req: lowRisk(), keys: "pa", lines: []string{""},
			want: approval.Decision{Request: "req-1", Verdict: approval.Approve, By: "reviewer"}},
		{name: "diff", req: lowRisk(), keys: "da", paged: true,
			want: approval.Decision{Request: "req-1", Verdict: approval.Approve, By: "reviewer"}},
		{name: "help", req: lowRisk(), keys: "?a", output: []string{"pick files: push only the files you choose"},
			want: approval.Decision{Request: "req-1", Verdict: approval.Approve, By: "reviewer"}},
		{name: "unknown key", req: lowRisk(), keys: "xa", output: []string{"Unknown key 'x'. Press ? for help."},
			want: approval.Decision{Request: "req-1", Verdict: approval.Approve, By: "reviewer"}},
		{name: "high risk needs yes", req: exampleRequest(), keys: "aa", lines: []string{"y", "yes"},
			output: []string{"High risk in this push, so approving it asks for yes:\n    !! pushes to protected branch main\n  Type yes", "Not approved."},
			want:   approval.Decision{Request: "req-1", Verdict: approval.Approve, By: "reviewer"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &approvaltest.Script{Keys: []rune(c.keys), Lines: c.lines, TTY: true}
			got, err := review.Prompt(s, c.req)
			if err != nil {
				t.Fatalf("%v\noutput:\n%s", err, s.Out.String())
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("decision %+v, want %+v", got, c.want)
			}
			for _, o := range c.output {
				if !strings.Contains(s.Out.String(), o) {
					t.Errorf("the reviewer did not see %q:\n%s", o, s.Out.String())
				}
			}
			if c.paged != (len(s.Paged) > 0) || c.paged && !strings.Contains(s.Paged[0], "+# Q3") {
				t.Errorf("paged %q", s.Paged)
			}
		})
	}
}

func TestPromptFailsClosed(t *testing.T) {
	if _, err := review.Prompt(&approvaltest.Script{Keys: []rune("a")}, exampleRequest()); !errors.Is(err, review.ErrNoTerminal) {
		t.Errorf("without a terminal: %v", err)
	}
	// Running out of input decides nothing.
	if d, err := review.Prompt(&approvaltest.Script{TTY: true}, exampleRequest()); err == nil {
		t.Errorf("end of input decided %+v", d)
	}
	// Picking is not offered when the push cannot be picked.
	r := exampleRequest()
	r.Pickable = false
	s := &approvaltest.Script{Keys: []rune("pr"), Lines: []string{""}, TTY: true}
	d, err := review.Prompt(s, r)
	if err != nil || d.Verdict != approval.Reject || strings.Contains(s.Out.String(), "ick files") {
		t.Errorf("pick on a request that cannot be picked: %+v %v\n%s", d, err, s.Out.String())
	}
}
