package gittools_test

import (
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
)

// git_stage with amend replaces the latest staged commit through the
// worker's own tool; its refusals, and git_discard's without a commit id
// when nothing was rejected, say what to do instead.
func TestAmendAndDiscardThroughTheTools(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	cs := connect(t, h, nil)
	if out, isErr := callMCP(t, cs, "git_stage", map[string]any{"amend": true}); !isErr || !strings.Contains(out, "nothing is staged to amend") {
		t.Errorf("amend with nothing staged (error %v): %s", isErr, out)
	}
	okMCP(t, cs, "write_file", map[string]any{"path": "a.txt", "content": "first\n"})
	if out, isErr := callMCP(t, cs, "git_stage", map[string]any{}); !isErr || !strings.Contains(out, "it is empty") {
		t.Errorf("git_stage without a message (error %v): %s", isErr, out)
	}
	first := okMCP(t, cs, "git_stage", map[string]any{"message": "Add a\n\nWith a body."})
	okMCP(t, cs, "write_file", map[string]any{"path": "a.txt", "content": "second\n"})
	okMCP(t, cs, "write_file", map[string]any{"path": "b.txt", "content": "b\n"})
	out := okMCP(t, cs, "git_stage", map[string]any{"amend": true, "files": []string{"a.txt"}})
	if !strings.Contains(out, "replaced "+strings.Fields(first)[1]+" with staged") || !strings.Contains(out, `"Add a"`) {
		t.Errorf("amend answered:\n%s", out)
	}
	status := okMCP(t, cs, "git_status", nil)
	if strings.Count(status, `"Add a"`) != 1 || !strings.Contains(status, "b.txt") {
		t.Errorf("git_status after amend:\n%s", status)
	}
	diff := okMCP(t, cs, "git_diff", map[string]any{"commit_id": "HEAD"})
	if !strings.Contains(diff, "+second") || strings.Contains(diff, "b.txt") {
		t.Errorf("the amended commit:\n%s", diff)
	}
	if out, isErr := callMCP(t, cs, "git_discard", map[string]any{}); !isErr || !strings.Contains(out, "no staged commit carries a change the reviewer rejected") || !strings.Contains(out, "give commit_id") {
		t.Errorf("git_discard {} with nothing rejected (error %v): %s", isErr, out)
	}
}
