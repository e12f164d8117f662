//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sandbox"
)

// startWorker runs airlock serve with args on a fresh repository and
// connects to it as the worker's MCP client.
func startWorker(t *testing.T, args ...string) (*worker, *lockedBuffer, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	root := t.TempDir()
	env := isolatedEnv(t, root)
	repo, wf := runnerWorker(t, env, root)
	cs, stderr := serveMCP(t, ctx, env, root, wf, args...)
	return &worker{t: t, ctx: ctx, cs: cs}, stderr, repo
}

// runnerWorker makes a repository under root (branch agent is the
// target) and a worker file on it that pulls it whole.
func runnerWorker(t testing.TB, env []string, root string) (repo, workerFile string) {
	t.Helper()
	requireGit(t)
	repo = filepath.Join(root, "project")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# Project\n"), 0o644)
	mustGit(t, env, repo, "init", "-q", "-b", "main")
	mustGit(t, env, repo, "add", "-A")
	mustGit(t, env, repo, "commit", "-qm", "init")
	mustGit(t, env, repo, "branch", "agent")
	workerFile = filepath.Join(root, "w.md")
	os.WriteFile(workerFile, []byte(fmt.Sprintf("---\nname: runner\ngit:\n  default_target: {type: local, path: %q, branch: agent}\n  auto_pull: [{path: .}]\n---\n", repo)), 0o644)
	return repo, workerFile
}

// serveMCP runs airlock serve --worker wf with args in dir and connects to
// it as the worker's MCP client; the connection closes at the test's end.
func serveMCP(t testing.TB, ctx context.Context, env []string, dir, wf string, args ...string) (*mcp.ClientSession, *lockedBuffer) {
	t.Helper()
	stderr := &lockedBuffer{}
	serve := exec.Command(airlockBinary(t), append([]string{"serve", "--worker", wf}, args...)...)
	serve.Env, serve.Dir, serve.Stderr = env, dir, stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "airlock-run-e2e", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: serve, TerminateDuration: 3 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("airlock serve's stderr:\n%s", stderr.String())
		}
	})
	return cs, stderr
}

func toolNames(t *testing.T, w *worker) []string {
	lt, err := w.cs.ListTools(w.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// The run tool over the real MCP protocol, from the real binary: a command
// runs in the jail, its file lands in the workspace, and it is pushed.
func TestRunOverMCP(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	w, stderr, repo := startWorker(t, "--auto-approve", "default")
	if !slices.Contains(toolNames(t, w), "run") {
		t.Fatalf("no run tool; serve said:\n%s", stderr.String())
	}
	mustContain(t, "serve's stderr", stderr.Await("commands run in a sandbox (workspace-write)"), "commands run in a sandbox (workspace-write)")
	// One line says how a run's processes are bounded together: a cgroup
	// v2, or the count and a watch on their memory.
	var budget string
	for _, l := range strings.Split(stderr.Await("a run's processes"), "\n") {
		if strings.Contains(l, "a run's processes") {
			budget = l
		}
	}
	if !strings.Contains(budget, "cgroup v2 under") && !strings.Contains(budget, "watch on their summed memory") {
		t.Errorf("serve does not say how runs are bounded:\n%s", stderr.String())
	}
	t.Logf("serve said: %s", budget)
	out := w.call("run", map[string]any{"command": "cat /etc/hostname; ls /root 2>&1; echo built > result.txt"})
	mustContain(t, "run", out, "exit 0", "created: result.txt", "airlock", "--- stdout ---")
	if strings.Contains(out, "No such file") == false && strings.Contains(out, "Permission denied") == false {
		t.Errorf("the server's home was visible:\n%s", out)
	}
	mustContain(t, "read_file", w.call("read_file", map[string]any{"path": "result.txt"}), "built")
	w.call("git_stage", map[string]any{"message": "Add the result"})
	mustContain(t, "git_push", w.call("git_push", map[string]any{}), "pushed")
	env := isolatedEnv(t, t.TempDir())
	mustContain(t, "the target", mustGit(t, env, repo, "show", "agent:result.txt"), "built")
	mustContain(t, "a bad run", w.refused("run", map[string]any{"command": "true", "argv": []string{"true"}}), "not both")
}

// With --run off the tool is absent, and serve says so.
func TestRunOff(t *testing.T) {
	w, stderr, _ := startWorker(t, "--run", "off")
	if slices.Contains(toolNames(t, w), "run") {
		t.Error("the run tool is listed with --run off")
	}
	mustContain(t, "serve's stderr", stderr.Await("the run tool is off"), "the run tool is off")
}
