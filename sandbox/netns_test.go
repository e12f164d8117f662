package sandbox_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/sandbox"
	"golang.org/x/sys/unix"
)

// netnsEnv marks the test binary run again inside a network namespace the
// test made (TestNetworkedRunInATestNetwork).
const netnsEnv = "AIRLOCK_TEST_OWN_NETNS"

// The metadata address, the private ranges and a host's own addresses are
// unreachable from a run with the network, names resolve through the
// host's resolver (a loopback one, as systemd-resolved's 127.0.0.53) and
// the internet is reached through the stack; an allowed pair on the LAN is
// reached and another port of that host is not. All of it inside a network
// namespace this test makes, where nothing can leave the machine: its only
// links are its loopback and a veth pair to a second namespace, "lan",
// holding the metadata address, a private address and an "internet" one
// (198.51.100.7, TEST-NET-2); the test's resolv.conf, bound in a mount
// namespace of its own, names a DNS responder it runs on 127.0.0.53.
func TestNetworkedRunInATestNetwork(t *testing.T) {
	needNetworkStack(t)
	if os.Getuid() != 0 {
		t.Skip("making the test's own network namespace (veth, addresses, routes) needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip (iproute2) is not installed; .ci/run installs it")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNetworkInsideTheTestsNamespace$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); errors.Is(err, syscall.EPERM) {
		t.Skipf("this root may not make a network namespace (a container without CAP_SYS_ADMIN): %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	out := buf.Bytes()
	t.Logf("in the test's network namespace:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNetworkInsideTheTestsNamespace") {
		t.Errorf("the test in its own network namespace failed: %v", err)
	}
}

// TestNetworkInsideTheTestsNamespace is TestNetworkedRunInATestNetwork's
// inside: it runs only there.
func TestNetworkInsideTheTestsNamespace(t *testing.T) {
	if os.Getenv(netnsEnv) != "1" {
		t.Skip("TestNetworkedRunInATestNetwork runs this in a network namespace of its own")
	}
	// Nothing mounted here may reach the host's mount namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	ownNetworks(t)
	j := newJail(t, nil)
	internet, metadata, lanPort := "198.51.100.7:80", "169.254.169.254:80", "10.77.0.2:80"
	hostOwn := listen(t, "10.77.0.1:0").Addr().String()
	// A public address of the host's own (as a cloud machine's), shut only
	// because the host delivers it to itself.
	hostPublic := listen(t, "203.0.113.9:0").Addr().String()
	loop := listen(t, "127.0.0.1:0").Addr().(*net.TCPAddr)
	targets := map[string]string{
		"internet":         internet,
		"internet-by-name": "example.test:80",
		"metadata":         metadata,
		"metadata-by-name": "metadata.test:80",
		"lan-allowed":      lanPort,
		"lan-other-port":   "10.77.0.2:81",
		"private-far":      "10.88.0.1:80",
		"host-own-address": hostOwn,
		"host-public":      hostPublic,
		"host-loopback":    loop.String(),
		"host-via-gateway": "10.0.2.2:" + itoa(loop.Port),
	}
	script := probeScript(targets) + "; getent hosts example.test || echo example.test unresolved; python3 -c '" + tcpDNS + "'"
	allow := []netip.AddrPort{netip.MustParseAddrPort(lanPort)}
	code, out, errOut := j.runSpec(script, func(s *sandbox.Spec) { s.Network, s.AllowHosts = true, allow })
	t.Logf("with the network: exit %d:\n%s%s", code, out, errOut)
	wantProbes(t, out, targets, "internet", "internet-by-name", "lan-allowed")
	if !strings.Contains(out, "198.51.100.7    example.test") {
		t.Errorf("example.test did not resolve through the host's resolver:\n%s", out)
	}
	if !strings.Contains(out, "over TCP: 198.51.100.7") {
		t.Errorf("example.test did not resolve over TCP through the relay:\n%s", out)
	}

	code, out, errOut = j.runSpec(script, func(s *sandbox.Spec) { s.AllowHosts = allow })
	t.Logf("without the network: exit %d:\n%s%s", code, out, errOut)
	wantProbes(t, out, targets)
	if !strings.Contains(out, "example.test unresolved") {
		t.Errorf("a name resolved in a run without the network:\n%s", out)
	}
}

func itoa(n int) string {
	return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(n)).String()[len("0.0.0.0:"):]
}

// tcpDNS is Python that asks the run's nameserver for example.test's
// address over TCP and prints it.
const tcpDNS = `import socket, struct
q = struct.pack(">HHHHHH", 7, 0x100, 1, 0, 0, 0) + b"\x07example\x04test\x00" + struct.pack(">HH", 1, 1)
try:
    s = socket.create_connection(("10.0.2.3", 53), timeout=3)
    s.sendall(struct.pack(">H", len(q)) + q)
    n = struct.unpack(">H", s.recv(2))[0]
    a = b""
    while len(a) < n:
        a += s.recv(n - len(a))
    print("over TCP:", socket.inet_ntoa(a[-4:]))
except OSError as e:
    print("over TCP: refused", e)
`

// ownNetworks builds the test's networks in this (new) namespace: "lan",
// a second namespace joined by a veth pair, with listeners on port 80 and
// 81 of each of its addresses; a default route to it; a DNS responder on
// 127.0.0.53 named by a resolv.conf bound over /etc/resolv.conf.
func ownNetworks(t *testing.T) {
	t.Helper()
	lanFD := lanNamespace(t)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// ip names a namespace by a file under /run/netns: a tmpfs of this
	// mount namespace's own.
	if err := os.MkdirAll("/run/netns", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", "/run/netns", "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("/run/netns/lan", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("/proc/self/fd/"+itoa(lanFD), "/run/netns/lan", "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	run("link", "set", "lo", "up")
	run("addr", "add", "203.0.113.9/32", "dev", "lo")
	run("link", "add", "veth0", "type", "veth", "peer", "name", "veth1", "netns", "lan")
	run("addr", "add", "10.77.0.1/24", "dev", "veth0")
	run("link", "set", "veth0", "up")
	run("route", "add", "default", "via", "10.77.0.2")
	for _, a := range [][]string{
		{"link", "set", "lo", "up"}, {"addr", "add", "10.77.0.2/24", "dev", "veth1"}, {"link", "set", "veth1", "up"},
		{"addr", "add", "169.254.169.254/32", "dev", "lo"}, {"addr", "add", "198.51.100.7/32", "dev", "lo"},
		{"addr", "add", "10.88.0.1/32", "dev", "lo"},
	} {
		run(append([]string{"-n", "lan"}, a...)...)
	}
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver 127.0.0.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(conf, "/etc/resolv.conf", "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.53:53")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	names := map[string][4]byte{"example.test.": {198, 51, 100, 7}, "metadata.test.": {169, 254, 169, 254}}
	go answerDNS(pc, names)
	ln, err := net.Listen("tcp", "127.0.0.53:53")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go answerDNSOverTCP(ln, names)
}

// lanNamespace makes the "lan" namespace on a thread of its own, opens
// its listeners there (0.0.0.0:80 and :81, before its addresses exist:
// a wildcard needs none), and returns a descriptor of it.
func lanNamespace(t *testing.T) int {
	t.Helper()
	type made struct {
		fd  int
		err error
	}
	c := make(chan made)
	go func() {
		// The thread stays in "lan" and ends with this goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			c <- made{-1, err}
			return
		}
		for _, a := range []string{"0.0.0.0:80", "0.0.0.0:81"} {
			ln, err := net.Listen("tcp", a)
			if err != nil {
				c <- made{-1, err}
				return
			}
			t.Cleanup(func() { ln.Close() })
			go acceptAndClose(ln)
		}
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY, 0)
		c <- made{fd, err}
	}()
	m := <-c
	if m.err != nil {
		t.Fatal(m.err)
	}
	return m.fd
}

// answerDNS answers each A query for a name of names with its address,
// any other with NXDOMAIN.
func answerDNS(pc net.PacketConn, names map[string][4]byte) {
	buf := make([]byte, 512)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if a := dnsAnswer(buf[:n], names); a != nil {
			_, _ = pc.WriteTo(a, from)
		}
	}
}

// dnsAnswer is the answer to the query q; nil when q is not one.
func dnsAnswer(q []byte, names map[string][4]byte) []byte {
	n := len(q)
	if n < 17 {
		return nil
	}
	// The question: labels from offset 12, then type and class.
	var name strings.Builder
	i := 12
	for i < n && q[i] != 0 {
		l := int(q[i])
		if i+1+l > n {
			return nil
		}
		name.Write(q[i+1 : i+1+l])
		name.WriteByte('.')
		i += 1 + l
	}
	end := i + 5
	if end > n {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	a := append([]byte{}, q[:end]...)
	binary.BigEndian.PutUint16(a[2:], 0x8180) // a response, recursion available
	binary.BigEndian.PutUint16(a[6:], 0)
	binary.BigEndian.PutUint16(a[8:], 0)
	binary.BigEndian.PutUint16(a[10:], 0)
	if ip, ok := names[name.String()]; !ok {
		a[3] |= 3 // NXDOMAIN
	} else if qtype == 1 {
		binary.BigEndian.PutUint16(a[6:], 1)
		a = append(a, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		a = append(a, ip[:]...)
	}
	return a
}

// answerDNSOverTCP answers each connection's queries as answerDNS does,
// each with its length before it.
func answerDNSOverTCP(ln net.Listener, names map[string][4]byte) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			// One query, answered through a packet pair of our own.
			var n [2]byte
			if _, err := io.ReadFull(c, n[:]); err != nil {
				return
			}
			q := make([]byte, binary.BigEndian.Uint16(n[:]))
			if _, err := io.ReadFull(c, q); err != nil {
				return
			}
			a := dnsAnswer(q, names)
			if a == nil {
				return
			}
			_, _ = c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(a))), a...))
		}()
	}
}
