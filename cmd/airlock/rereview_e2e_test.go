//go:build unix

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommentThenReReview is issue 24's second goal, end to end through a
// real `airlock serve` and a real `airlock review` in a terminal: the
// reviewer comments on a line and asks for changes; the worker's git_push
// answers with the comment, its file, line and the lines around it, and
// the server's instructions carry it; the worker fixes it and pushes again
// with a reply; the reviewer is told this is a re-review, sees the reply
// and only what changed since (the interdiff), and approves in at most
// three keys.
func TestCommentThenReReview(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	env := isolatedEnv(t, root)

	var notes strings.Builder
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&notes, "note %d\n", i)
	}
	repo := filepath.Join(root, "project")
	initRepo(t, env, repo, map[string]string{"notes.txt": notes.String(), "other.txt": "other\n"})
	mustGit(t, env, repo, "branch", "agent")
	w := startWorkerOn(t, ctx, bin, env, root, "commented", repo)
	first := strings.Replace(notes.String(), "note 6\n", "note six, in words\n", 1)
	w.call("write_file", map[string]any{"path": "notes.txt", "content": first})
	w.call("write_file", map[string]any{"path": "other.txt", "content": "other, changed\n"})
	w.call("git_stage", map[string]any{"message": "Spell out note six"})
	push := w.pushAsync(map[string]any{})
	waitPending(t, w, "Spell out note six")

	rv := startReview(t, bin, env, root)
	scr := rv.Screen
	const within = 20 * time.Second
	at := scr.WaitFor(t, 0, "[?]help", within)
	rv.Press(t, "c")
	at = scr.WaitFor(t, at, "Comment on which file?", within)
	rv.Press(t, "1\r")
	at = scr.WaitFor(t, at, "On which line? (12, a range 12-14, old 12", within)
	rv.Press(t, "6\r")
	at = scr.WaitFor(t, at, "note six, in words", within)
	at = scr.WaitFor(t, at, "Comment (empty to drop it):", within)
	rv.Press(t, "use digits, as the other notes do\r")
	at = scr.WaitFor(t, at, "Your comments so far (1):", within)
	at = scr.WaitFor(t, at, "[?]help", within)
	rv.Press(t, "r")
	at = scr.WaitFor(t, at, "Asking for changes with your 1 comment.", within)
	rv.Press(t, "see the comment\r")
	at = scr.WaitFor(t, at, "Asked for changes; nothing is pushed, and the worker gets your 1 comment and your reason", within)
	res := awaitPush(t, push, scr)
	if !res.isErr {
		t.Fatalf("git_push after a request for changes did not fail: %s", res.text)
	}
	mustContain(t, "the worker's answer", res.text, "notes.txt:6", "use digits, as the other notes do", "note 5", "note six, in words", "note 7", "see the comment")
	status := w.call("git_status", map[string]any{})
	mustContain(t, "git_status", status, "use digits, as the other notes do")

	// The worker fixes it and pushes again, with a reply.
	second := strings.Replace(notes.String(), "note 6\n", "note 6, in digits\n", 1)
	w.call("write_file", map[string]any{"path": "notes.txt", "content": second})
	// As the advice says: the rejected commit is replaced, not buried
	// under a second one.
	w.call("git_stage", map[string]any{"message": "Use digits for note six", "amend": true})
	push = w.pushAsync(map[string]any{"reply": "digits now"})
	waitPending(t, w, "Use digits for note six")

	at = scr.WaitFor(t, at, "Asked again:", within)
	at = scr.WaitFor(t, at, "[?]help", within)
	shown := scr.String()[strings.LastIndex(scr.String(), "Asked again:"):]
	mustContain(t, "the re-review", shown, "use digits, as the other notes do", `"digits now"`, "[d]iff since")
	keys := 0
	press := func(k string) { keys++; rv.Press(t, k) }
	press("d")
	at = scr.WaitFor(t, at, "note 6, in digits", within)
	press("q")
	at = scr.WaitFor(t, at, "[?]help", within)
	interdiff := scr.String()[strings.LastIndex(scr.String(), "[d]iff since"):]
	if strings.Contains(interdiff, "other, changed") {
		t.Errorf("the interdiff shows other.txt, which did not change since the reviewer saw it:\n%s", interdiff)
	}
	press("a")
	scr.WaitFor(t, at, "the push goes ahead", within)
	if res := awaitPush(t, push, scr); res.isErr {
		t.Fatalf("the second git_push: %s", res.text)
	}
	if keys > 3 {
		t.Errorf("approving the re-review took %d keys", keys)
	}
	if got := mustGit(t, env, repo, "show", "agent:notes.txt"); got != second {
		t.Errorf("the target holds:\n%s", got)
	}
	if status := w.call("git_status", map[string]any{}); strings.Contains(status, "use digits") {
		t.Errorf("the answered comment is still open:\n%s", status)
	}
	rv.Press(t, "\x03")
	if code := rv.Wait(t, within); code != 0 {
		t.Errorf("airlock review exited %d after Ctrl-C", code)
	}
}
