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

	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// TestReviewThroughTheFleetQueue: a real `airlock serve --store` (stdio,
// a worker on a real repository) and a real `airlock review --store` in a
// terminal that shares no directory with it (another runtime directory:
// no socket of the server's reaches it), both on one NATS server. The
// reviewer sees the push, with its server's host, through the queue and
// approves it; the server's ledger records the reviewer's decision, and
// the push lands in the target.
func TestReviewThroughTheFleetQueue(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := natstest.Server(t, natstest.Options{}).ClientURL()

	serverRoot, reviewerRoot := t.TempDir(), t.TempDir()
	env := isolatedEnv(t, serverRoot)
	repo := filepath.Join(serverRoot, "project")
	gittest.InitRepo(t, env, repo, "Initial commit", map[string]string{"README.md": "# project\n"})
	mustGit(t, env, repo, "branch", "agent")
	wf := filepath.Join(serverRoot, "fleet-writer.md")
	front := fmt.Sprintf("---\nname: fleet-writer\ngit:\n  default_target: {type: local, path: %q, branch: agent}\n---\n", repo)
	if err := os.WriteFile(wf, []byte(front), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDurable(t, ctx, bin, env, serverRoot, "--worker", wf, "--timeout", "60s", "--ephemeral", "--store", store)
	w := d.w
	w.ledger = filepath.Join(serverRoot, "state", "airlock", "ledger.jsonl")
	d.stderr.Await("requests also go to the fleet's review queue")

	w.call("write_file", map[string]any{"path": "notes/fleet.md", "content": "reviewed from afar\n"})
	w.call("git_stage", map[string]any{"message": "Notes from the fleet"})
	push := w.pushAsync(map[string]any{})
	waitPending(t, w, "Notes from the fleet")

	rv := startReview(t, bin, isolatedEnv(t, reviewerRoot), reviewerRoot, "--store", store)
	scr := rv.Screen
	const within = 20 * time.Second
	host, _ := os.Hostname()
	at := scr.WaitFor(t, 0, "through its review queue at", within)
	at = scr.WaitFor(t, at, fmt.Sprintf(`from worker "fleet-writer" (server pid %d on %q)`, d.cmd.Process.Pid, host), within)
	at = scr.WaitFor(t, at, "[?]help", within)
	rv.Press(t, "a")
	scr.WaitFor(t, at, "Approved; the push goes ahead.", within)
	if r := awaitPush(t, push, scr); r.isErr {
		t.Fatalf("the push: %s", r.text)
	}
	if got := mustGit(t, env, repo, "show", "agent:notes/fleet.md"); got != "reviewed from afar\n" {
		t.Errorf("the target's agent branch: %q", got)
	}
	ledger, err := os.ReadFile(w.ledger)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ledger), `"verdict":"approve"`) || !strings.Contains(string(ledger), "fleet queue") {
		t.Errorf("the server's ledger has no approval by the fleet's reviewer:\n%s", ledger)
	}
	if _, err := os.Stat(filepath.Join(reviewerRoot, "state", "airlock", "ledger.jsonl")); err == nil {
		t.Error("the reviewer wrote a ledger of its own")
	}
	rv.Press(t, "\x03")
	if code := rv.Wait(t, within); code != 0 {
		t.Errorf("airlock review exited %d after Ctrl-C", code)
	}
}
