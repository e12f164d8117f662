//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReviewTwoServers: two real `airlock serve` processes, each with a
// push waiting, and one real `airlock review` in a terminal. The reviewer
// sees both in one list, each under its server and session, takes the
// second server's (the newer) first, and it alone lands; the first
// server's, left alone, is then shown directly and lands in its own
// repository.
func TestReviewTwoServers(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	env := isolatedEnv(t, root)
	ledgerFile := filepath.Join(root, "state", "airlock", "ledger.jsonl")

	type side struct {
		name, repo, initial string
		w                   *worker
		push                <-chan pushResult
	}
	sides := []*side{{name: "writer-one"}, {name: "writer-two"}}
	for _, s := range sides {
		s.repo = filepath.Join(root, s.name)
		initRepo(t, env, s.repo, map[string]string{"README.md": "# " + s.name + "\n"})
		mustGit(t, env, s.repo, "branch", "agent")
		s.initial = strings.TrimSpace(mustGit(t, env, s.repo, "rev-parse", "agent"))
		wf := filepath.Join(root, s.name+".md")
		front := fmt.Sprintf("---\nname: %s\ngit:\n  default_target: {type: local, path: %q, branch: agent}\n---\n", s.name, s.repo)
		if err := os.WriteFile(wf, []byte(front), 0o644); err != nil {
			t.Fatal(err)
		}
		d := startDurable(t, ctx, bin, env, root, "--worker", wf, "--timeout", "60s", "--ephemeral")
		s.w = d.w
		s.w.ledger = ledgerFile
	}
	// One push each, the first server's first.
	for _, s := range sides {
		s.w.call("write_file", map[string]any{"path": "notes/" + s.name + ".md", "content": "from " + s.name + "\n"})
		s.w.call("git_stage", map[string]any{"message": "Notes of " + s.name})
		s.push = s.w.pushAsync(map[string]any{})
		waitPending(t, s.w, "Notes of "+s.name)
	}

	rv := startReview(t, bin, env, root)
	scr := rv.Screen
	const within = 20 * time.Second
	at := scr.WaitFor(t, 0, "2 requests are waiting:", within)
	at = scr.WaitFor(t, at, "Review which?", within)
	list := scr.String()[strings.LastIndex(scr.String(), "2 requests are waiting:"):]
	one, two := strings.Index(list, `worker "writer-one"`), strings.Index(list, `worker "writer-two"`)
	if one < 0 || two < one || !strings.Contains(list, "Session ") ||
		!strings.Contains(list[two:], "2  local:"+sides[1].repo+" (branch: agent)") || !strings.Contains(list[two:], "1 commit, 1 file, +1 -0") {
		t.Fatalf("the list:\n%s", list)
	}

	// The second server's request first.
	rv.Press(t, "2\r")
	at = scr.WaitFor(t, at, `from worker "writer-two"`, within)
	at = scr.WaitFor(t, at, "[?]help", within)
	rv.Press(t, "a")
	at = scr.WaitFor(t, at, "Approved; the push goes ahead.", within)
	if r := awaitPush(t, sides[1].push, scr); r.isErr {
		t.Fatalf("writer-two's push: %s", r.text)
	}
	if got := mustGit(t, env, sides[1].repo, "show", "agent:notes/writer-two.md"); got != "from writer-two\n" {
		t.Errorf("writer-two's repository: %q", got)
	}
	select {
	case r := <-sides[0].push:
		t.Fatalf("writer-one's push answered before any decision on it: %+v", r)
	default:
	}
	if got := strings.TrimSpace(mustGit(t, env, sides[0].repo, "rev-parse", "agent")); got != sides[0].initial {
		t.Errorf("writer-one's agent moved to %s before its push was decided", got)
	}

	// The first server's, alone now, is shown at once.
	at = scr.WaitFor(t, at, `from worker "writer-one"`, within)
	at = scr.WaitFor(t, at, "[?]help", within)
	rv.Press(t, "a")
	scr.WaitFor(t, at, "Approved; the push goes ahead.", within)
	if r := awaitPush(t, sides[0].push, scr); r.isErr {
		t.Fatalf("writer-one's push: %s", r.text)
	}
	if got := mustGit(t, env, sides[0].repo, "show", "agent:notes/writer-one.md"); got != "from writer-one\n" {
		t.Errorf("writer-one's repository: %q", got)
	}
	if _, err := gitOut(t, env, sides[0].repo, "cat-file", "-e", "agent:notes/writer-two.md"); err == nil {
		t.Error("writer-two's file reached writer-one's repository")
	}
	rv.Press(t, "\x03")
	if code := rv.Wait(t, within); code != 0 {
		t.Errorf("airlock review exited %d after Ctrl-C", code)
	}
}
