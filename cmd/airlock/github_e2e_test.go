//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	ledgerpkg "github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/targets/githubemu"
)

// TestGitHubThroughTheBinary: `airlock serve` with a worker whose target is
// on GitHub (the emulator, named by the server's environment), the token
// from GITHUB_TOKEN, pushes auto-approved by the operator. The push lands
// with the staged SHA, and the token is nowhere: not in the ledger, not in
// what the server printed, not in what the worker was told, even when
// GitHub refuses the push.
func TestGitHubThroughTheBinary(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const token = "ghp_e2eSECRETtoken0123456789abcdefghijkl"
	root := t.TempDir()
	emu, err := githubemu.New(filepath.Join(root, "github"), "octo-org", "reports", token)
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	env := isolatedEnv(t, root, "GITHUB_TOKEN="+token, "AIRLOCK_GITHUB_API_URL="+emu.URL, "AIRLOCK_GITHUB_GIT_URL="+emu.GitURL)
	seed := filepath.Join(root, "seed")
	mustGit(t, env, root, "init", "-q", "-b", "main", seed)
	os.WriteFile(filepath.Join(seed, "README.md"), []byte("# reports\n"), 0o644)
	mustGit(t, env, seed, "add", "-A")
	mustGit(t, env, seed, "commit", "-qm", "init")
	mustGit(t, env, seed, "push", "-q", emu.Dir(), "main")

	workerFile := filepath.Join(root, "worker.md")
	os.WriteFile(workerFile, []byte(`---
name: gh-writer
description: Writes reports on GitHub
author: { name: GH Writer, email: gh-writer@example.com }
git:
  default_target: { type: github, repo: octo-org/reports, branch: airlock/q3 }
  auto_pull:
    - path: .
      source: { type: github, repo: octo-org/reports, branch: main }
---
Write the Q3 report.
`), 0o644)
	serveErr := &lockedBuffer{}
	serve := exec.Command(bin, "serve", "--worker", workerFile, "--timeout", "30s", "--auto-approve", "github:octo-org/reports")
	serve.Env, serve.Dir, serve.Stderr = env, root, serveErr
	client := mcp.NewClient(&mcp.Implementation{Name: "gh-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve, TerminateDuration: 3 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, serveErr.String())
	}
	defer cs.Close()
	w := &worker{t: t, ctx: ctx, cs: cs}

	mustContain(t, "the pulled README", w.call("read_file", map[string]any{"path": "README.md"}), "# reports")
	w.call("write_file", map[string]any{"path": "reports/q3.md", "content": "# Q3\n\nRevenue grew 15%.\n"})
	staged := w.call("git_stage", map[string]any{"message": "Add the Q3 report"})
	id := strings.Fields(staged)[1]
	mustContain(t, "git_push", w.call("git_push", nil), "pushed "+id, "github:octo-org/reports", "airlock/q3")
	head := strings.TrimSpace(mustGit(t, env, emu.Dir(), "rev-parse", "airlock/q3"))
	if !strings.HasPrefix(head, id) {
		t.Fatalf("airlock/q3 is at %s, the staged commit was %s", head, id)
	}
	if log := mustGit(t, env, emu.Dir(), "log", "--format=%an %s", "airlock/q3"); log != "GH Writer Add the Q3 report\nTest Person init\n" {
		t.Errorf("log on GitHub:\n%s", log)
	}

	// GitHub refuses the next push (a 403 that is not a rate limit): the
	// worker is told, and still no token anywhere.
	emu.Inject(githubemu.Fault{Method: "POST", Path: "/git/commits", Status: 403, Message: "Resource not accessible by integration"})
	w.call("write_file", map[string]any{"path": "reports/q4.md", "content": "# Q4\n"})
	w.call("git_stage", map[string]any{"message": "Add Q4"})
	refusal := w.refused("git_push", nil)
	mustContain(t, "a refused push", refusal, "403", "write access")

	cs.Close()
	serve.Wait()
	ledger, _ := os.ReadFile(filepath.Join(root, "state", "airlock", "ledger.jsonl"))
	if len(ledger) == 0 {
		t.Fatal("no ledger was written")
	}
	for what, text := range map[string]string{"the ledger": string(ledger), "the server's stderr": serveErr.String(), "the worker's error": refusal} {
		if strings.Contains(text, token) || strings.Contains(text, token[4:20]) {
			t.Errorf("the token is in %s", what)
		}
	}
	out, _, code := runAirlock(t, env, root, "ledger", "verify")
	if code != 0 || !strings.Contains(out, "checked against github:octo-org/reports: it keeps record ") {
		t.Errorf("ledger verify exited %d: %s", code, out)
	}

	// The ledger cut back to before the push that landed, its anchor
	// rewritten to match: GitHub still keeps the push's record. The
	// ledger no longer names the target, so verify is told of it.
	path := filepath.Join(root, "state", "airlock", "ledger.jsonl")
	recs, _ := ledgerpkg.Records(path)
	cut := slices.IndexFunc(recs, func(r ledgerpkg.Record) bool { return r.Kind == ledgerpkg.KindPush })
	lines := strings.SplitAfter(string(ledger), "\n")
	os.WriteFile(path, []byte(strings.Join(lines[:cut], "")), 0o600)
	anchor, _ := json.Marshal(ledgerpkg.Anchor{Seq: recs[cut-1].Seq, Hash: recs[cut-1].Hash})
	os.WriteFile(ledgerpkg.AnchorPath(path), anchor, 0o600)
	if out, _, code = runAirlock(t, env, root, "ledger", "verify"); code != 0 {
		t.Errorf("verify without --target exited %d: %s", code, out)
	}
	out, _, code = runAirlock(t, env, root, "ledger", "verify", "--target", "github:octo-org/reports")
	if code != exitBroken || !strings.Contains(out, "cut: the ledger was cut or rewritten: target github:octo-org/reports records record ") {
		t.Errorf("verify of a ledger cut behind a push to GitHub exited %d: %s", code, out)
	}
}
