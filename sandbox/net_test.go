package sandbox_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/sandbox"
)

// probe is Python that connects to each LABEL=HOST:PORT of its arguments
// and prints "LABEL connected" or "LABEL refused (why)".
const probe = `import socket, sys
for a in sys.argv[1:]:
    label, hp = a.split("=", 1)
    host, port = hp.rsplit(":", 1)
    host = host.strip("[]")
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
        print(label, "connected")
    except OSError as e:
        print(label, "refused", e)
`

// probeScript runs probe on targets (label to host:port).
func probeScript(targets map[string]string) string {
	var args []string
	for l, hp := range targets {
		args = append(args, l+"="+hp)
	}
	return "python3 -c '" + probe + "' " + strings.Join(args, " ")
}

// listen opens a TCP listener on addr that accepts and closes, until the
// test ends.
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go acceptAndClose(ln)
	return ln
}

func acceptAndClose(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

func needNetworkStack(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("/usr/bin/python3 is not installed")
	}
	if _, err := exec.LookPath("slirp4netns"); err != nil {
		t.Skip("slirp4netns is not installed (apt-get install slirp4netns; .ci/run installs it)")
	}
}

// wantProbes checks probe's output: each label in reach connected, every
// other label refused.
func wantProbes(t *testing.T, out string, targets map[string]string, reach ...string) {
	t.Helper()
	for l, hp := range targets {
		want := "refused"
		for _, r := range reach {
			if r == l {
				want = "connected"
			}
		}
		if !strings.Contains(out, l+" "+want) {
			t.Errorf("%s (%s): want %s, got:\n%s", l, hp, want, out)
		}
	}
}

// A run given the network reaches none of the host's loopback services:
// not a listener there, not NATS, not airlock's --http port (a listener
// like any other), by the run's own loopback or by slirp4netns's gateway
// (10.0.2.2, the host's loopback unless refused) or DNS address; an
// operator's --run-allow-host pair is reached, exactly: another port of the
// same host is not. Loopback only: nothing here can leave the machine.
func TestNetworkedRunReachesNotTheHostsLoopback(t *testing.T) {
	needNetworkStack(t)
	j := newJail(t, nil)
	plain := listen(t, "127.0.0.1:0").Addr().String()
	allowed := listen(t, "127.0.0.1:0").Addr().(*net.TCPAddr)
	neighbour := listen(t, "127.0.0.1:0").Addr().(*net.TCPAddr)
	ns := natstest.Server(t, natstest.Options{})
	natsPort := ns.Addr().(*net.TCPAddr).Port
	_, plainPort, _ := net.SplitHostPort(plain)
	targets := map[string]string{
		"listener":          plain,
		"listener-gateway":  "10.0.2.2:" + plainPort,
		"listener-dns-addr": "10.0.2.3:" + plainPort,
		"nats":              fmt.Sprintf("127.0.0.1:%d", natsPort),
		"nats-gateway":      fmt.Sprintf("10.0.2.2:%d", natsPort),
		"allowed":           allowed.String(),
		"neighbour":         neighbour.String(),
		"allowed-gateway":   fmt.Sprintf("10.0.2.2:%d", allowed.Port),
	}
	pairs := []netip.AddrPort{netip.MustParseAddrPort(allowed.String())}
	reach := []string{"allowed"}
	if ln6, err := net.Listen("tcp", "[::1]:0"); err == nil {
		// An IPv6 pair, where the host has IPv6 on its loopback.
		ln6.Close()
		six := listen(t, "[::1]:0").Addr().String()
		pairs = append(pairs, netip.MustParseAddrPort(six))
		targets["allowed-v6"] = six
		reach = append(reach, "allowed-v6")
	}
	code, out, errOut := j.runSpec(probeScript(targets), func(s *sandbox.Spec) {
		s.Network, s.AllowHosts = true, pairs
	})
	t.Logf("exit %d:\n%s%s", code, out, errOut)
	wantProbes(t, out, targets, reach...)

	// Without the network: nothing at all, not even the allowed pair.
	code, out, errOut = j.runSpec(probeScript(targets), func(s *sandbox.Spec) { s.AllowHosts = pairs })
	t.Logf("without the network: exit %d:\n%s%s", code, out, errOut)
	wantProbes(t, out, targets)
}

// routeChange is Python that asks the kernel, over netlink, to delete the
// run's route shutting link-local (169.254.0.0/16) and prints how it
// answered: "deleted" would mean the run could open its way to the
// metadata address.
const routeChange = `import socket, struct
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
rtm = struct.pack("BBBBBBBBI", socket.AF_INET, 16, 0, 0, 254, 4, 0, 8, 0)
attr = struct.pack("HH", 8, 1) + socket.inet_aton("169.254.0.0")
body = rtm + attr
hdr = struct.pack("IHHII", 16 + len(body), 25, 1 | 4, 1, 0)
s.send(hdr + body)
err = struct.unpack("i", s.recv(4096)[16:20])[0]
print("deleted" if err == 0 else "refused errno %d" % -err)
with open("/proc/self/status") as f:
    print([l.strip() for l in f if l.startswith("CapEff")][0])
`

// The command of a run with the network cannot change the routes that
// shut the host: it holds no capability over its network namespace.
func TestNetworkedRunCannotChangeItsRoutes(t *testing.T) {
	needNetworkStack(t)
	j := newJail(t, nil)
	code, out, errOut := j.runSpec("python3 -c '"+routeChange+"'; ip -4 route 2>/dev/null || cat /proc/net/route",
		func(s *sandbox.Spec) { s.Network = true })
	t.Logf("exit %d:\n%s%s", code, out, errOut)
	if !strings.Contains(out, "refused errno 1\n") || !strings.Contains(out, "CapEff:\t0000000000000000") {
		t.Errorf("the run's command could change its routes, or holds capabilities:\n%s%s", out, errOut)
	}
}
