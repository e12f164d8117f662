package gittools_test

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
)

// periodic is n lines of "a", "b", "c" repeated, with edit's lines
// replaced (numbered from 1).
func periodic(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s)
			continue
		}
		b.WriteString(string(rune('a'+(i-1)%3)) + "\n")
	}
	return b.String()
}

// A hunk taken without an earlier hunk of its file that adds lines lands
// where the reviewer saw it, in a file where its context fits every three
// lines: at its old line, not at the line its header gives in the new
// file (git apply of the bare hunk text starts looking there, and so
// lands it one line off; git add -p rewrites the header first, as
// airlock's placement does).
func TestAcceptPlacesAHunkWhereItWasShown(t *testing.T) {
	h := acceptProject(t, nil)
	h.call("write_file", map[string]any{"path": "p.txt", "content": periodic(40, nil)})
	h.call("git_stage", map[string]any{"message": "Base"})
	h.call("write_file", map[string]any{"path": "p.txt", "content": periodic(40, map[int]string{2: "b\nx\ny\n", 30: "C\n"})})
	h.call("git_stage", map[string]any{"message": "Two changes"})
	done := make(chan error, 1)
	go func() {
		_, err := h.try("git_push", nil)
		done <- err
	}()
	req := pendingRequest(t, h)
	sel := selection(req,
		func() (approval.Accepted, approval.AcceptedFile) { return accept(t, req, "Base", "p.txt", 0) },
		func() (approval.Accepted, approval.AcceptedFile) { return accept(t, req, "Two changes", "p.txt", 1) })
	_, err := h.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Pick, Accept: sel})
	must(t, err)
	must(t, <-done)
	if got, want := git(t, h.repo, "show", "main:p.txt"), periodic(40, map[int]string{30: "C\n"}); got != want {
		t.Errorf("p.txt landed as\n%s\nwant line 30 changed:\n%s", got, want)
	}
}
