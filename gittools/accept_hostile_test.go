package gittools_test

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/gittest"
)

// Hostile or broken selections at the real gate, over a real push: each
// is refused with an error that says what was wrong and what to do, and
// changes nothing (the sandbox's status and staged commits as they were,
// the request still pending); the push then lands what a good selection
// names.
func TestAcceptHostileSelections(t *testing.T) {
	h := acceptProject(t, nil)
	stageTwoCommits(h)
	done := make(chan error, 1)
	go func() {
		_, err := h.try("git_push", nil)
		done <- err
	}()
	req := pendingRequest(t, h)
	before := h.call("git_status", nil)
	good := func() []approval.Accepted {
		return selection(req, func() (approval.Accepted, approval.AcceptedFile) {
			return accept(t, req, "Add the parser", "README.md", 0)
		})
	}
	with := func(edit func(a []approval.Accepted) []approval.Accepted) []approval.Accepted { return edit(good()) }
	readme := req.Commits[0].Files[0]
	if readme.Path != "README.md" {
		t.Fatalf("the first file of the first commit is %s", readme.Path)
	}
	huge := make([]int, 1<<20)
	tests := []struct {
		name    string
		d       approval.Decision
		answers []string
	}{
		{"a stale hunk id", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Files[0].Hunks[0].ID = approval.HunkID("@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n")
			return a
		})}, []string{"is not the hunk the request shows there", "select from the request as it is"}},
		{"the right id at the wrong index", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Files[0].Hunks[0] = approval.AcceptedHunk{Index: 1, ID: approval.HunkID(readme.Hunks[0])}
			return a
		})}, []string{"hunk 1 of \"README.md\"", "is not the hunk the request shows there"}},
		{"a line out of range", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Files[0].Hunks[0].Lines = []int{0, 99}
			return a
		})}, []string{"there is no line 99", "(0 to 1)"}},
		{"a negative line", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Files[0].Hunks[0].Lines = []int{-1}
			return a
		})}, []string{"there is no line -1"}},
		{"a million lines", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Files[0].Hunks[0].Lines = huge
			return a
		})}, []string{"line 0 of hunk 0", "accepted twice"}},
		{"a hunk index past the file's", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Files[0].Hunks[0].Index = 1 << 40
			return a
		})}, []string{"there is no hunk 1099511627776"}},
		{"a commit twice", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			return append(a, a[0])
		})}, []string{"is accepted twice", "name each commit once"}},
		{"a file twice", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Files = append(a[0].Files, a[0].Files[0])
			return a
		})}, []string{`"README.md" in commit`, "accepted twice; name each file once"}},
		{"a commit not in the request", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Commit[0] ^= 0xff
			return a
		})}, []string{"is not one of this push's", "accept only the commits the request lists"}},
		{"a message with NUL", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Message = "Tidy\x00 the README"
			return a
		})}, []string{"control character U+0000"}},
		{"a message of whitespace", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Message = " \n\t\r\n "
			return a
		})}, []string{"it is empty", "say what the change does"}},
		{"a message of 1 MB", approval.Decision{Verdict: approval.Pick, Accept: with(func(a []approval.Accepted) []approval.Accepted {
			a[0].Message = strings.Repeat("a", 1<<20)
			return a
		})}, []string{"it is 1048576 bytes; keep it under"}},
		{"hunks and paths", approval.Decision{Verdict: approval.Pick, Accept: good(), Paths: []string{"README.md"}},
			[]string{"either files (paths) or hunks (accept), not both"}},
		{"an approval naming hunks", approval.Decision{Verdict: approval.Approve, Accept: good()},
			[]string{"an approval takes the whole push", "pick"}},
		{"an approval naming files", approval.Decision{Verdict: approval.Approve, Paths: []string{"README.md"}},
			[]string{"an approval takes the whole push", "pick"}},
	}
	for _, tc := range tests {
		tc.d.Request = req.ID
		_, err := h.gate.Resolve(tc.d)
		if err == nil {
			t.Fatalf("%s: the gate took it", tc.name)
		}
		mustContain(t, tc.name, err.Error(), tc.answers...)
		if p := h.gate.Pending(); len(p) != 1 || p[0].ID != req.ID {
			t.Fatalf("%s: the request is no longer pending", tc.name)
		}
		if now := h.call("git_status", nil); now != before {
			t.Fatalf("%s changed the sandbox:\n%s\nwas\n%s", tc.name, now, before)
		}
	}
	if n := strings.TrimSpace(gittest.Git(t, h.repo, "rev-list", "--count", "main")); n != "1" {
		t.Fatalf("the target has %s commits after refused selections", n)
	}
	_, err := h.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Pick, Accept: good()})
	must(t, err)
	must(t, <-done)
	if got := git(t, h.repo, "diff", "--stat", "main~1", "main"); !strings.Contains(got, "README.md | 2 +-") || strings.Count(got, "|") != 1 {
		t.Errorf("the landed commit: %s", got)
	}
}
