//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sandbox"
)

// runBench is airlock serve (durable, as a worker has it) on a worker
// whose base is a repository of 10,000 files of about 2 KB, pulled lazily,
// driven over MCP as a client drives it.
type runBench struct {
	b          *testing.B
	bin, root  string
	env        []string
	repo, wf   string
	cs         *mcp.ClientSession
	serveStops func()
}

func newRunBench(b *testing.B) *runBench {
	if err := sandbox.Available(); err != nil {
		b.Skip(err)
	}
	requireGit(b)
	r := &runBench{b: b, bin: airlockBinary(b), root: b.TempDir()}
	r.env = isolatedEnv(b, r.root)
	r.repo = filepath.Join(r.root, "repo")
	files := map[string]string{}
	line := strings.Repeat("x", 63) + "\n"
	for i := 0; i < 10_000; i++ {
		files[fmt.Sprintf("d%02d/f%04d.txt", i%100, i)] = fmt.Sprintf("file %d\n", i) + strings.Repeat(line, 32)
	}
	for p, c := range files {
		full := filepath.Join(r.repo, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(c), 0o644)
	}
	mustGit(b, r.env, r.repo, "init", "-q", "-b", "main")
	mustGit(b, r.env, r.repo, "add", "-A")
	mustGit(b, r.env, r.repo, "-c", "gc.auto=0", "commit", "-qm", "10,000 files")
	mustGit(b, r.env, r.repo, "gc", "-q")
	r.wf = filepath.Join(r.root, "w.md")
	os.WriteFile(r.wf, []byte(fmt.Sprintf("---\nname: bench\ngit:\n  default_target: {type: local, path: %q, branch: work}\n"+
		"  auto_pull: [{path: ., source: {type: local, path: %q, branch: main}}]\nsandbox:\n  max_files: 100000\n  max_total_bytes: 1073741824\n---\n",
		r.repo, r.repo)), 0o644)
	return r
}

// start starts a new session's server and connects to it.
func (r *runBench) start() {
	ctx := context.Background()
	cmd := exec.Command(r.bin, "serve", "--worker", r.wf, "--new")
	cmd.Env, cmd.Dir = r.env, r.root
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		r.b.Fatal(err)
	}
	r.cs = cs
	r.serveStops = func() { cs.Close() }
}

// run calls run with command and returns how long the call took.
func (r *runBench) run(command string) time.Duration {
	start := time.Now()
	res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": command}})
	took := time.Since(start)
	if err != nil || res.IsError || !strings.HasPrefix(resultText(res), "exit 0") {
		r.b.Fatalf("run %q: %v %s", command, err, resultText(res))
	}
	return took
}

// host runs command with /bin/sh in dir on the host and returns how long
// it took.
func host(b *testing.B, dir, command string) time.Duration {
	start := time.Now()
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v %s", command, err, out)
	}
	return time.Since(start)
}

// writeFiles writes 10,000 files of 2 KB under o/, in one process.
const writeFiles = `/usr/bin/python3 -c "
import os
os.makedirs('o', exist_ok=True)
for i in range(10000):
    with open('o/f%d' % i, 'w') as f: f.write('%d\n' % i + 'x' * 2040)
"`

// BenchmarkRunOverMCP is issue 21's run goals, each against its peer in
// the same run, over MCP with the real binary on a 10,000-file lazy base:
// the first run (the workspace mirrored for the first time) against `git
// worktree add` of the same commit into tmpfs; `run true` against
// starting true; a run writing 10,000 files of 2 KB, and one removing
// them, against the same commands in a tmpfs directory on the host.
func BenchmarkRunOverMCP(b *testing.B) {
	r := newRunBench(b)
	shm := tmpfsDir(b)
	var first, worktree, runTrue, execTrue, write, hostWrite, remove, hostRemove time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r.start()
		b.StartTimer()
		first += r.run("true")

		wt := filepath.Join(shm, fmt.Sprintf("wt%d", i))
		start := time.Now()
		mustGit(b, r.env, r.repo, "worktree", "add", "-q", "--detach", wt, "main")
		worktree += time.Since(start)
		b.StopTimer()
		mustGit(b, r.env, r.repo, "worktree", "remove", "--force", wt)
		b.StartTimer()

		for k := 0; k < 10; k++ {
			runTrue += r.run("true") / 10
			start = time.Now()
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
			execTrue += time.Since(start) / 10
		}

		write += r.run(writeFiles)
		remove += r.run("rm -rf o")
		dir := filepath.Join(shm, fmt.Sprintf("host%d", i))
		os.MkdirAll(dir, 0o755)
		hostWrite += host(b, dir, writeFiles)
		hostRemove += host(b, dir, "rm -rf o")
		b.StopTimer()
		r.serveStops()
		b.StartTimer()
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	b.ReportMetric(ms(first), "first-run-ms")
	b.ReportMetric(ms(worktree), "worktree-add-ms")
	b.ReportMetric(ms(first)/ms(worktree), "first-run/worktree-add")
	b.ReportMetric(ms(runTrue), "run-true-ms")
	b.ReportMetric(ms(execTrue), "exec-true-ms")
	b.ReportMetric(ms(runTrue)-ms(execTrue), "run-true-overhead-ms")
	b.ReportMetric(ms(write), "write10k-ms")
	b.ReportMetric(ms(hostWrite), "host-write10k-ms")
	b.ReportMetric(ms(write)/ms(hostWrite), "write10k/tmpfs")
	b.ReportMetric(ms(remove), "rm10k-ms")
	b.ReportMetric(ms(hostRemove), "host-rm10k-ms")
	b.ReportMetric(ms(remove)/ms(hostRemove), "rm10k/tmpfs")
}
