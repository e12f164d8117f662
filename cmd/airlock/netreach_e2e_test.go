//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/mcptest"
	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/sandbox"
)

// reachProbe is Python that connects to each LABEL=HOST:PORT of its
// arguments and prints "LABEL connected" or "LABEL refused (why)".
const reachProbe = `import socket, sys
for a in sys.argv[1:]:
    label, hp = a.split("=", 1)
    host, port = hp.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
        print(label, "connected")
    except OSError as e:
        print(label, "refused", e)
`

// Issue 32: a run with the network (here every run: --danger) reached
// serve's own --http port and NATS on the host's loopback, and could
// approve its own push. Through the real binary: such a run reaches
// neither, by the run's loopback or its stack's gateway (10.0.2.2), nor a
// listener of the host's; the operator's --run-allow-host pair is reached,
// exactly: another port of the same host is not. Loopback only.
func TestNetworkedRunReachesNeitherHTTPNorNATS(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	if _, err := exec.LookPath("slirp4netns"); err != nil {
		t.Skip("slirp4netns is not installed (apt-get install slirp4netns; .ci/run installs it)")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("/usr/bin/python3 is not installed")
	}
	listen := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return ln.Addr().String()
	}
	allowed, neighbour := listen(), listen()
	ns := natstest.Server(t, natstest.Options{})
	natsPort := ns.Addr().(*net.TCPAddr).Port

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	env := isolatedEnv(t, root)
	_, wf := runnerWorker(t, env, root)
	_, endpoint, token, _ := startHTTPServe(t, airlockBinary(t), env, root, "127.0.0.1:0", "--worker", wf, "--danger", "--run-allow-host", allowed)
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	cs, _, err := mcptest.ConnectHTTP(ctx, t, endpoint, token)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{
		"http":         u.Host,
		"http-gateway": "10.0.2.2:" + u.Port(),
		"nats":         fmt.Sprintf("127.0.0.1:%d", natsPort),
		"nats-gateway": fmt.Sprintf("10.0.2.2:%d", natsPort),
		"allowed":      allowed,
		"neighbour":    neighbour,
	}
	var args []string
	for l, hp := range targets {
		args = append(args, l+"="+hp)
	}
	out, isErr := mcptest.CallText(ctx, t, cs, "run", map[string]any{"command": "python3 -c '" + reachProbe + "' " + strings.Join(args, " ")})
	t.Logf("the run:\n%s", out)
	if isErr {
		t.Fatal(out)
	}
	for l, hp := range targets {
		want := l + " refused"
		if l == "allowed" {
			want = l + " connected"
		}
		if !strings.Contains(out, want) {
			t.Errorf("%s (%s): want %q", l, hp, want)
		}
	}
}

// --run-allow-host takes an IP address and a port, exactly; anything else
// is refused at start with what to give instead.
func TestServeRefusesBadRunAllowHost(t *testing.T) {
	requireGit(t)
	root := t.TempDir()
	env := isolatedEnv(t, root)
	bin := airlockBinary(t)
	for _, tc := range []struct{ arg, want string }{
		{"registry.lan:5000", "give an IP address and a port"},
		{"127.0.0.1", "give an IP address and a port"},
		{"127.0.0.1:0", "not 0"},
		{"0.0.0.0:80", "one host's address"},
		{"10.0.2.3:53", "the run's own network"},
		{"--run off", "--run off runs none"},
	} {
		cmd := exec.Command(bin, "serve", "--run-allow-host", tc.arg)
		if tc.arg == "--run off" {
			cmd = exec.Command(bin, "serve", "--run", "off", "--run-allow-host", "127.0.0.1:5000")
		}
		cmd.Env, cmd.Dir = env, filepath.Join(root)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "--run-allow-host") {
			t.Errorf("--run-allow-host %s: %v\n%s\nwant an error saying %q", tc.arg, err, out, tc.want)
		}
	}
}
