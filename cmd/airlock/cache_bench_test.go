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

// benchModule is a real module with real dependencies: airlock's own
// go.mod and go.sum with its memfs and internal packages (memfs builds on
// go-billy and go-git's plumbing), committed in a repository under root.
func benchModule(b *testing.B, env []string, root string) string {
	b.Helper()
	src, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	repo := filepath.Join(root, "module")
	os.MkdirAll(repo, 0o755)
	for _, p := range []string{"go.mod", "go.sum", "memfs", "internal"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(src, p), repo).CombinedOutput(); err != nil {
			b.Fatalf("cp %s: %v %s", p, err, out)
		}
	}
	mustGit(b, env, repo, "init", "-q", "-b", "main")
	mustGit(b, env, repo, "add", "-A")
	mustGit(b, env, repo, "commit", "-qm", "module")
	return repo
}

// BenchmarkGoTestAfterRestart is issue 21's warm build: `go test ./...` of
// a real module in run, answered over MCP by an airlock serve started
// anew (its first run), after an earlier server's run warmed the worker's
// cache; the peer, in the same run, is the same `go test ./...` on the
// host with its own warm caches. Modules come from the host's module
// cache through a file proxy (--run-ro of its download directory), as an
// operator without the network would set it up.
func BenchmarkGoTestAfterRestart(b *testing.B) {
	if err := sandbox.Available(); err != nil {
		b.Skip(err)
	}
	requireGit(b)
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		b.Skip("no Go toolchain at /usr/local/go, where the jail's PATH looks")
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		b.Fatal(err)
	}
	modcache := strings.TrimSpace(string(out))
	download := filepath.Join(modcache, "cache", "download")
	if _, err := os.Stat(download); err != nil {
		b.Skipf("no module download cache at %s: build airlock once first", download)
	}
	root := b.TempDir()
	// Go makes its module caches read-only; a user who is not root could
	// not remove them otherwise.
	b.Cleanup(func() { exec.Command("chmod", "-R", "u+w", root).Run() })
	env := isolatedEnv(b, root)
	repo := benchModule(b, env, root)
	wf := filepath.Join(root, "w.md")
	os.WriteFile(wf, []byte(fmt.Sprintf("---\nname: gotest\ngit:\n  default_target: {type: local, path: %q, branch: work}\n  auto_pull: [{path: ., source: {type: local, path: %q, branch: main}}]\n---\n", repo, repo)), 0o644)

	var lastAirlock, lastHost string
	inAirlock := func() time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		cs, stderr := serveMCP(b, ctx, env, root, wf, "--ephemeral", "--run-timeout", "15m", "--run-ro", download, "--run-env", "GOPROXY=file://"+download)
		defer cs.Close()
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": "go test ./...", "timeout": 900}})
		took := time.Since(start)
		if err != nil || res.IsError || !strings.Contains(resultText(res), "exit 0") {
			b.Fatalf("run go test: %v\n%s\nserve: %s", err, resultText(res), stderr.String())
		}
		lastAirlock = resultText(res)
		return took
	}
	// The host's checkout is on tmpfs, as the workspace's mirror is.
	checkout := filepath.Join(tmpfsDir(b), "module")
	if out, err := exec.Command("cp", "-r", repo, checkout).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
	// Its caches are filled as the worker's are: its own module cache from
	// the same file proxy, holding this module's dependencies only.
	hostEnv := append(append([]string{}, env...), "GOCACHE="+filepath.Join(root, "host-gocache"), "GOMODCACHE="+filepath.Join(root, "host-modcache"),
		"GOFLAGS=-mod=mod", "GOPROXY=file://"+download, "GOSUMDB=off", "GOTOOLCHAIN=local")
	onHost := func() time.Duration {
		cmd := exec.Command("go", "test", "./...")
		cmd.Env, cmd.Dir = hostEnv, checkout
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		if err != nil {
			b.Fatalf("go test on the host: %v\n%s", err, out)
		}
		lastHost = string(out)
		return took
	}
	// Both caches warm: the worker's by an earlier server's run, the host's
	// by an earlier go test.
	cold := inAirlock()
	hostCold := onHost()

	// Medians: a shared 2-core machine's other load lands on one
	// iteration or another, and the two alternate.
	var airlock, host []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		airlock = append(airlock, inAirlock())
		host = append(host, onHost())
	}
	b.StopTimer()
	// Both warm: every package's result comes from go's cache.
	b.Logf("the last run in airlock:\n%s\nthe last on the host:\n%s", lastAirlock, lastHost)
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return ds[len(ds)/2].Seconds() * 1e3
	}
	b.ReportMetric(median(airlock), "airlock-p50-ms")
	b.ReportMetric(median(host), "host-p50-ms")
	b.ReportMetric(median(airlock)/median(host), "airlock/host")
	b.ReportMetric(cold.Seconds()*1e3, "airlock-cold-ms")
	b.ReportMetric(hostCold.Seconds()*1e3, "host-cold-ms")
}
