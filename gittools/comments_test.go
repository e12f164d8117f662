package gittools_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
)

// plainLines is a file of n lines, "line 1" to "line n".
func plainLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func callMCP(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return text(res), res.IsError
}

// okMCP is callMCP for a call that must succeed.
func okMCP(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	out, isErr := callMCP(t, cs, tool, args)
	if isErr {
		t.Fatalf("%s %v: %s", tool, args, out)
	}
	return out
}

// Issue 24: the reviewer's comments reach the worker through the real MCP
// protocol: git_push answers with each comment, its file, line and the
// lines around it; a client that initializes after that finds them in
// the instructions, and git_status says them; pushing again with a reply
// answers them, and the reviewer's next request says what changed since
// (only the worker's change) and carries the reply.
func TestCommentsBackToTheWorker(t *testing.T) {
	h := newHarness(t, approval.Policy{}, 10*time.Second)
	var mu sync.Mutex
	var reqs []*approval.Request
	reviewer(t, h.gate, func(r *approval.Request) approval.Decision {
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, r)
		if len(reqs) == 1 {
			return approval.Decision{Verdict: approval.Reject, Reason: "two things first", Comments: []approval.Comment{
				{Path: "notes.txt", Line: 6, Text: "say why this line is here"},
				{Text: "add a line to the README about notes.txt"},
			}}
		}
		return approval.Decision{Verdict: approval.Approve}
	})
	cs := connect(t, h, nil)
	okMCP(t, cs, "write_file", map[string]any{"path": "notes.txt", "content": plainLines(12)})
	okMCP(t, cs, "write_file", map[string]any{"path": "README.md", "content": "# Project\n\nNotes.\n"})
	okMCP(t, cs, "git_stage", map[string]any{"message": "Add notes"})
	out, isErr := callMCP(t, cs, "git_push", nil)
	if !isErr || !strings.Contains(out, "push rejected: two things first") {
		t.Fatalf("the rejected push answered (error %v):\n%s", isErr, out)
	}
	i := strings.Index(out, "The reviewer asked for changes")
	if i < 0 {
		t.Fatalf("the answer has no comments:\n%s", out)
	}
	// The advice on the rejected commit names its id, which changes
	// with the clock: it is checked apart from the golden text.
	body, advice, ok := strings.Cut(out[i:], "\n\nThe rejected commit stays staged: ")
	if !ok {
		t.Fatalf("the answer does not say the rejected commit stays staged:\n%s", out)
	}
	golden(t, "push_comments.golden", body)
	mustContain(t, "the rejection's advice", advice, `"Add notes"`, "git_discard commit_id=", "git_stage amend: true")

	// A client that initializes now (a new conversation, a reconnect) is
	// told them; git_status says them too.
	again := connect(t, h, nil)
	instr := again.InitializeResult().Instructions
	mustContain(t, "the instructions after comments", instr, "Open review comments", "notes.txt:6", "> 6 | line 6", "say why this line is here", "add a line to the README")
	status, _ := callMCP(t, again, "git_status", nil)
	mustContain(t, "git_status after comments", status, "Open review comments", "notes.txt:6", "say why this line is here")

	// The worker answers: one line of notes.txt, and the README.
	okMCP(t, again, "edit_file", map[string]any{"path": "notes.txt", "old_text": "line 6\n", "new_text": "line 6: kept for the report's header\n"})
	okMCP(t, again, "git_stage", map[string]any{"message": "Say why line 6 is there"})
	out, isErr = callMCP(t, again, "git_push", map[string]any{"reply": "explained line 6; the README already mentions notes"})
	if isErr || !strings.Contains(out, "pushed") {
		t.Fatalf("the second push answered (error %v):\n%s", isErr, out)
	}
	mu.Lock()
	first, second := reqs[0], reqs[1]
	mu.Unlock()
	sn := second.Since
	if sn == nil {
		t.Fatal("the second request does not say what the reviewer saw before")
	}
	if sn.Request != first.ID || sn.Tree != first.Tree || sn.Why != "you asked for changes" || sn.Reason != "two things first" ||
		len(sn.Comments) != 2 || sn.Reply != "explained line 6; the README already mentions notes" {
		t.Errorf("since = %+v; want request %s, its tree, the reason, both comments and the reply", sn, first.ID)
	}
	wantDiff := "diff --git a/notes.txt b/notes.txt\n"
	if !strings.HasPrefix(sn.Interdiff, wantDiff) || strings.Count(sn.Interdiff, "diff --git") != 1 ||
		!strings.Contains(sn.Interdiff, "-line 6\n+line 6: kept for the report's header\n") {
		t.Errorf("the interdiff is not only the worker's change:\n%s", sn.Interdiff)
	}
	if !strings.Contains(second.Diff, "README.md") {
		t.Errorf("the full diff lost the README:\n%s", second.Diff)
	}
	// Answered: gone from the instructions and from git_status.
	later := connect(t, h, nil)
	if instr := later.InitializeResult().Instructions; strings.Contains(instr, "Open review comments") || strings.Contains(instr, "say why") {
		t.Errorf("answered comments are still in the instructions:\n%s", instr)
	}
	if status, _ := callMCP(t, later, "git_status", nil); strings.Contains(status, "Open review comments") {
		t.Errorf("answered comments are still in git_status:\n%s", status)
	}
}

// An approval may carry comments: the push lands, and the worker is told
// them with the answer, to act on in its next change.
func TestApprovalWithComments(t *testing.T) {
	h := newHarness(t, approval.Policy{}, 10*time.Second)
	reviewer(t, h.gate, func(*approval.Request) approval.Decision {
		return approval.Decision{Verdict: approval.Approve, Comments: []approval.Comment{{Path: "notes.txt", Line: 1, Text: "next time, a title"}, {Path: "notes.txt", Text: "fine otherwise"}}}
	})
	h.call("write_file", map[string]any{"path": "notes.txt", "content": "one\ntwo\n"})
	h.call("git_stage", map[string]any{"message": "Add notes"})
	out := h.call("git_push", nil)
	mustContain(t, "an approval with comments", out, "pushed", "approved the push, with comments", "notes.txt:1", "> 1 | one", "next time, a title", "notes.txt (the whole file)", "fine otherwise")
	if got := git(t, h.repo, "show", "main:notes.txt"); got != "one\ntwo\n" {
		t.Errorf("the push did not land: %q", got)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
