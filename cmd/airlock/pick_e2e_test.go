//go:build unix

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var updatePick = flag.Bool("update-pick", false, "rewrite testdata/pick_three_hunks.golden")

// TestReviewPicksThreeHunks is issue 24's goal, end to end: a worker
// stages two commits over five files through a real `airlock serve`, and
// a reviewer in a real `airlock review` in a terminal picks three hunks of
// them, key by key, as git add -p asks. The target receives two commits,
// each with its own message, holding exactly those hunks: its `git log -p`
// equals a golden file. The worker is told what landed and what stayed.
func TestReviewPicksThreeHunks(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	env := isolatedEnv(t, root)

	lines := func(prefix string, n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "%s %d\n", prefix, i)
		}
		return b.String()
	}
	repo := filepath.Join(root, "project")
	initRepo(t, env, repo, map[string]string{
		"a.txt": lines("alpha", 30), "b.txt": lines("bravo", 5),
		"d.txt": lines("delta", 5), "e.txt": lines("echo", 5),
	})
	mustGit(t, env, repo, "branch", "agent")
	initial := strings.TrimSpace(mustGit(t, env, repo, "rev-parse", "agent"))
	w := startWorkerOn(t, ctx, bin, env, root, "picker", repo)

	// Commit 1: a.txt in two places far apart, b.txt, a new c.txt.
	a := strings.Replace(lines("alpha", 30), "alpha 2\n", "alpha 2, first change\n", 1)
	a = strings.Replace(a, "alpha 28\n", "alpha 28, second change\n", 1)
	w.call("write_file", map[string]any{"path": "a.txt", "content": a})
	w.call("write_file", map[string]any{"path": "b.txt", "content": strings.Replace(lines("bravo", 5), "bravo 3\n", "bravo 3 changed\n", 1)})
	w.call("write_file", map[string]any{"path": "c.txt", "content": "charlie, new\n"})
	w.call("git_stage", map[string]any{"message": "Change a, b and add c\n\nThe first commit's body."})
	// Commit 2: d.txt and e.txt.
	w.call("write_file", map[string]any{"path": "d.txt", "content": strings.Replace(lines("delta", 5), "delta 4\n", "delta 4 changed\n", 1)})
	w.call("write_file", map[string]any{"path": "e.txt", "content": lines("echo", 5) + "echo 6\n"})
	w.call("git_stage", map[string]any{"message": "Change d and e"})
	push := w.pushAsync(map[string]any{})
	waitPending(t, w, "Change d and e")

	rv := startReview(t, bin, env, root)
	scr := rv.Screen
	const within = 20 * time.Second
	at := scr.WaitFor(t, 0, "[?]help", within)
	rv.Press(t, "p")
	// Commit 1, files in path order: a.txt's two hunks (the first only),
	// b.txt (no), c.txt (yes); commit 2: d.txt (yes), e.txt (no).
	for _, step := range []struct{ file, key string }{
		{"a.txt", "y"}, {"a.txt", "n"}, {"b.txt", "n"}, {"c.txt", "y"}, {"d.txt", "y"}, {"e.txt", "n"},
	} {
		at = scr.WaitFor(t, at, "Accept this hunk of "+step.file, within)
		rv.Press(t, step.key)
	}
	at = scr.WaitFor(t, at, "Push 2 commits?", within)
	summary := scr.String()[strings.LastIndex(scr.String(), "What you picked of request"):]
	mustContain(t, "the pick's summary", summary, "a.txt: 1 of 2 hunks", "c.txt: whole", "d.txt: whole", "b.txt", "e.txt")
	rv.Press(t, "y")
	scr.WaitFor(t, at, "the push goes ahead", within)
	res := awaitPush(t, push, scr)
	if res.isErr {
		t.Fatalf("git_push: %s", res.text)
	}
	mustContain(t, "the worker's answer", res.text, "Change a, b and add c", "Change d and e", "b.txt", "e.txt")

	got := mustGit(t, env, repo, "log", "-p", "--reverse", "--format=commit%n%n    %s%n%n    %b", initial+"..agent")
	golden := filepath.Join("testdata", "pick_three_hunks.golden")
	if *updatePick {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the target's git log -p differs from %s:\n%s", golden, got)
	}
	rv.Press(t, "\x03")
	if code := rv.Wait(t, within); code != 0 {
		t.Errorf("airlock review exited %d after Ctrl-C", code)
	}
}

// startWorkerOn starts an ephemeral `airlock serve` for a worker named name
// whose default target is repo's branch agent, and pulls it whole.
func startWorkerOn(t *testing.T, ctx context.Context, bin string, env []string, root, name, repo string) *worker {
	t.Helper()
	wf := filepath.Join(root, name+".md")
	front := fmt.Sprintf("---\nname: %s\ngit:\n  default_target: {type: local, path: %q, branch: agent}\n---\n", name, repo)
	if err := os.WriteFile(wf, []byte(front), 0o644); err != nil {
		t.Fatal(err)
	}
	w := startDurable(t, ctx, bin, env, root, "--worker", wf, "--timeout", "60s", "--ephemeral").w
	w.ledger = filepath.Join(root, "state", "airlock", "ledger.jsonl")
	w.call("git_pull", map[string]any{})
	return w
}
