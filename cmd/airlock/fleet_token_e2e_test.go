package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/mcptest"
)

// TestFleetServersShareTheServerToken: the servers of a fleet open new
// sessions with one token (the first server made it), so a load balancer
// may send a new client to any of them; an operator's
// AIRLOCK_HTTP_TOKEN is taken instead, and a short one is refused.
func TestFleetServersShareTheServerToken(t *testing.T) {
	r := newFleetRig(t, 1)
	a, b := r.server(), r.server()
	if a.token != b.token {
		t.Fatalf("two servers of one fleet print different server tokens: %s and %s", a.token, b.token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, _, err := mcptest.ConnectHTTP(ctx, t, b.base, a.token)
	if err != nil {
		t.Fatalf("a new session at b with the token a printed: %v", err)
	}
	cs.Close()

	own := strings.Repeat("0123456789abcdef", 4)
	c := startServer(t, append(isolatedEnv(t, t.TempDir()), envHTTPToken+"="+own), r.repo, "127.0.0.1:0", append([]string{"--store", r.nats}, fleetTrust(t, r.root)...)...)
	if c.token != own {
		t.Fatalf("with %s set the server's token is %s", envHTTPToken, c.token)
	}
	cmd := exec.Command(airlockBinary(t), append([]string{"serve", "--http", "127.0.0.1:0", "--run", "off", "--store", r.nats}, fleetTrust(t, r.root)...)...)
	cmd.Env, cmd.Dir = append(isolatedEnv(t, t.TempDir()), envHTTPToken+"=short"), r.repo
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitUsage || !strings.Contains(string(out), "at least 32 printable") {
		t.Fatalf("a short %s: %v, %s", envHTTPToken, err, out)
	}
}
