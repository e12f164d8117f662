package broker_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSocketRefusesAnotherUser: a process of another user that reaches
// the socket (its directory's and its own modes opened up, as an
// operator's mistake would) is not sent the pending request and cannot
// send a decision: the peer check holds where the modes do not.
func TestSocketRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to connect as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	dir := socketDir(t)
	s := newServer(t, dir, filepath.Join(t.TempDir(), "l.jsonl"), "w")
	if _, err := s.gate.Submit(requestFor("w"), nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(s.broker.Path(), 0o777); err != nil {
		t.Fatal(err)
	}
	const client = `import socket, sys
c = socket.socket(socket.AF_UNIX)
c.connect(sys.argv[1])
got = b""
try:
    c.sendall(b'{"type":"decision","decision":{"request":"x","verdict":"approve","by":"mallory"}}\n')
    c.settimeout(5)
    while True:
        b = c.recv(65536)
        if not b:
            break
        got += b
except (BrokenPipeError, ConnectionResetError):
    pass
sys.stdout.write("GOT[" + got.decode(errors="replace") + "]")
`
	out, err := exec.Command(setpriv, "--reuid=4242", "--regid=4242", "--clear-groups", py, "-c", client, s.broker.Path()).CombinedOutput()
	if err != nil {
		t.Fatalf("the other user's client: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "GOT[]") {
		t.Fatalf("a process of uid 4242 was answered: %s", out)
	}
	if len(s.gate.Pending()) != 1 {
		t.Fatal("the request was decided")
	}
}
