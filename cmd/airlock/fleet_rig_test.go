//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/mcptest"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// fleetServer is one airlock serve --http of a test's fleet: a process of
// its own, with a state directory of its own (another machine's), its
// stderr kept.
type fleetServer struct {
	cmd      *exec.Cmd
	base     string // http://ADDR/mcp
	token    string // its server token
	stderr   *lockedBuffer
	exited   chan struct{}
	env      []string
	dir      string
	addrFlag string
	args     []string
}

// startServer starts airlock serve --http addr in dir with env and args
// (--store ... for a fleet's), and waits until it prints its endpoint.
func startServer(t *testing.T, env []string, dir, addr string, args ...string) *fleetServer {
	t.Helper()
	s := &fleetServer{stderr: &lockedBuffer{}, exited: make(chan struct{}), env: env, dir: dir, addrFlag: addr, args: args}
	s.cmd = exec.Command(airlockBinary(t), append([]string{"serve", "--http", addr, "--run", "off"}, args...)...)
	s.cmd.Env, s.cmd.Dir = env, dir
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(s.kill)
	endpointRe := regexp.MustCompile(`at (http://\S+/mcp)$`)
	tokenRe := regexp.MustCompile(`Bearer ([0-9a-f]{64})"`)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(s.stderr, line)
			if m := endpointRe.FindStringSubmatch(line); m != nil && s.base == "" {
				s.base = m[1]
			}
			if m := tokenRe.FindStringSubmatch(line); m != nil && s.token == "" {
				s.token = m[1]
				close(ready)
			}
		}
		pr.Close()
	}()
	select {
	case <-ready:
	case <-s.exited:
		t.Fatalf("airlock serve exited before serving:\n%s", s.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("airlock serve did not print its endpoint in 30s:\n%s", s.stderr)
	}
	return s
}

// kill kills the server with SIGKILL and waits for it to be gone.
func (s *fleetServer) kill() {
	s.cmd.Process.Kill()
	<-s.exited
}

// restart starts the server again, with its environment and flags (its
// address: the same port when it was given one).
func (s *fleetServer) restart(t *testing.T) *fleetServer {
	t.Helper()
	return startServer(t, s.env, s.dir, s.addrFlag, s.args...)
}

// at is session id's address at this server.
func (s *fleetServer) at(id string) string { return s.base + "/" + id }

// fleetRig is a fleet's parts: a JetStream server, a repository every
// server works on (at the same path: every server of a fleet mounts it
// there), and how to start a server of the fleet.
type fleetRig struct {
	t      *testing.T
	nats   string
	repo   string
	root   string
	nextID int
}

func newFleetRig(t *testing.T, files int) *fleetRig {
	t.Helper()
	requireGit(t)
	airlockBinary(t)
	ns := natstest.Server(t, natstest.Options{})
	root := t.TempDir()
	repo := filepath.Join(root, "project")
	env := isolatedEnv(t, root)
	tree := map[string]string{"README.md": "# P\n"}
	for i := range files {
		tree[fmt.Sprintf("src/d%03d/f%05d.txt", i%100, i)] = fmt.Sprintf("file %d\n", i)
	}
	initRepo(t, env, repo, tree)
	return &fleetRig{t: t, nats: ns.ClientURL(), repo: repo, root: root}
}

// server starts a new server of the fleet: a machine of its own (home,
// state and runtime directories), the fleet's store, a lease of ttl.
func (r *fleetRig) server(extra ...string) *fleetServer {
	r.t.Helper()
	r.nextID++
	own := filepath.Join(r.root, fmt.Sprintf("machine%d", r.nextID))
	if err := os.MkdirAll(own, 0o755); err != nil {
		r.t.Fatal(err)
	}
	return startServer(r.t, isolatedEnv(r.t, own), r.repo, "127.0.0.1:0", append(append([]string{"--store", r.nats, "--lease-ttl", "30s"}, fleetTrust(r.t, r.root)...), extra...)...)
}

// connectWith opens an MCP session at url with token, trying again while
// the server answers that it cannot yet (a lease being taken over).
func connectWith(ctx context.Context, t testing.TB, url, token string) (*mcp.ClientSession, *mcptest.Headers, error) {
	for {
		cs, h, err := mcptest.ConnectHTTP(ctx, t, url, token)
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "try again") {
			return cs, h, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// write writes path with content; ok when the call was answered.
func write(ctx context.Context, cs *mcp.ClientSession, path, content string) (bool, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": path, "content": content}})
	if err != nil {
		return false, err
	}
	if res.IsError {
		return false, fmt.Errorf("write_file %s: %s", path, mcptest.ResultText(res))
	}
	return true, nil
}

// checkWritten reads every answered write back through cs.
func checkWritten(ctx context.Context, t *testing.T, cs *mcp.ClientSession, written map[string]string) {
	t.Helper()
	for path, want := range written {
		got, isErr := mcptest.CallText(ctx, t, cs, "read_file", map[string]any{"path": path})
		if isErr || !strings.Contains(got, want) {
			t.Errorf("%s, answered before a move, reads %q after it (error %v), want %q", path, got, isErr, want)
		}
	}
}

// quantile is q (0..1) of ds, sorted.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s)) + 0.5)
	return s[min(max(i-1, 0), len(s)-1)]
}

func moves() int {
	if os.Getenv("AIRLOCK_LONG_TESTS") != "" {
		return 20
	}
	return 3
}
