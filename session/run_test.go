package session_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session"
	"golang.org/x/sys/unix"
)

func needSandbox(t testing.TB) {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
}

// runEnv is a session with commands enabled, its mirrors in a directory
// the jail's user can pass through (unless opts names one).
func runEnv(t *testing.T, r string, opts session.RunOptions, c config) *env {
	t.Helper()
	needSandbox(t)
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	if opts.MirrorDir == "" {
		opts.MirrorDir = filepath.Join(dir, "mirrors")
	}
	c.run = &opts
	return newEnv(t, r, c)
}

func TestRunLandsInTheWorkspaceAndIsUndone(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n", "old.txt": "old\n", "dir/keep.txt": "k\n"})
	e := runEnv(t, r, session.RunOptions{}, config{})
	res, err := e.s.Run(context.Background(), session.RunArgs{
		Command: "cat README.md; echo new > made.txt; echo changed >> dir/keep.txt; rm old.txt; echo oops >&2; exit 3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 3 || res.Stdout != "# p\n" || res.Stderr != "oops\n" {
		t.Errorf("exit %d stdout %q stderr %q", res.Exit, res.Stdout, res.Stderr)
	}
	if !slices.Equal(res.Created, []string{"made.txt"}) || !slices.Equal(res.Modified, []string{"dir/keep.txt"}) || !slices.Equal(res.Deleted, []string{"old.txt"}) {
		t.Errorf("created %v modified %v deleted %v", res.Created, res.Modified, res.Deleted)
	}
	if b, _ := e.s.Workspace().ReadFile("made.txt"); string(b) != "new\n" {
		t.Errorf("made.txt = %q", b)
	}
	if _, err := e.s.Rollback(res.Checkpoint); err != nil {
		t.Fatal(err)
	}
	if b, err := e.s.Workspace().ReadFile("old.txt"); err != nil || string(b) != "old\n" {
		t.Errorf("after rollback old.txt = %q, %v", b, err)
	}
	if _, err := e.s.Workspace().ReadFile("made.txt"); err == nil {
		t.Error("after rollback made.txt is still there")
	}
	out, err := e.s.RunOutput(res.ID, "stderr")
	if err != nil || out != "oops\n" {
		t.Errorf("run_output: %q %v", out, err)
	}
}

// What the sandbox's rules refuse does not come in, and is named: a
// symlink out of the workspace, a .git directory, a denied file.
func TestRunRefusalsAreReported(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := runEnv(t, r, session.RunOptions{}, config{})
	res, err := e.s.Run(context.Background(), session.RunArgs{
		Command: "ln -s /etc/passwd pw; mkdir -p .git/hooks && echo evil > .git/hooks/post-checkout; echo SECRET=1 > .env; echo ok > fine.txt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, r := range res.Refused {
		refused = append(refused, r.Path)
	}
	for _, p := range []string{"pw", ".git", ".env"} {
		if !slices.Contains(refused, p) {
			t.Errorf("%s was not refused (refused: %v)", p, refused)
		}
		if _, err := e.s.Workspace().Lstat(p); err == nil {
			t.Errorf("%s reached the workspace", p)
		}
	}
	if !slices.Equal(res.Created, []string{"fine.txt"}) {
		t.Errorf("created %v", res.Created)
	}
}

// Real work: a Go module's tests run inside, write their result into the
// workspace, and the result is staged and pushed.
func TestRunGoTestThenPush(t *testing.T) {
	goroot := "/usr/local/go"
	if _, err := os.Stat(filepath.Join(goroot, "bin", "go")); err != nil {
		t.Skip("no Go toolchain at /usr/local/go")
	}
	r := repo(t, true, map[string]string{
		"go.mod":      "module example.com/m\n\ngo 1.22\n",
		"add.go":      "package m\n\nfunc Add(a, b int) int { return a + b }\n",
		"add_test.go": "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n",
	})
	e := runEnv(t, r, session.RunOptions{}, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}}})
	res, err := e.s.Run(context.Background(), session.RunArgs{Command: "go test ./... > test-result.txt 2>&1; echo $? >> test-result.txt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := e.s.Workspace().ReadFile("test-result.txt")
	if res.Exit != 0 || !strings.Contains(string(got), "ok  \texample.com/m") || !strings.HasSuffix(string(got), "0\n") {
		t.Fatalf("go test in the sandbox: exit %d, result %q, stderr %q", res.Exit, got, res.Stderr)
	}
	if _, err := e.s.Stage(nil, "Test results"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Push(context.Background(), "", "", nil); err != nil {
		t.Fatal(err)
	}
	if out := git(t, r, "show", "main:test-result.txt"); !strings.Contains(out, "example.com/m") {
		t.Errorf("pushed result %q", out)
	}
}

// A run that writes more than the workspace may hold is ended, and none of
// it comes in.
func TestRunWritingAGigabyteIsStopped(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := runEnv(t, r, session.RunOptions{}, config{limits: memfs.Limits{MaxTotalBytes: 64 << 20, MaxFileBytes: 16 << 20}})
	res, err := e.s.Run(context.Background(), session.RunArgs{Command: "head -c 1073741824 /dev/zero > big.bin; echo done"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Killed == "" || strings.Contains(res.Stdout, "done") {
		t.Errorf("the run was not stopped: %+v", res)
	}
	if _, err := e.s.Workspace().Lstat("big.bin"); err == nil {
		t.Error("big.bin reached the workspace")
	}
	if len(res.Refused) == 0 {
		t.Error("what did not come in is not reported")
	}
}

// runGate lets a test know that a run reached its command (so the run
// has its snapshot of the workspace) and hold it there: the command
// begins with gate.wait(), which opens the FIFO started (the test's open
// for writing returns then) and then reads the FIFO resume until the test
// lets it go on. Runs see the gate's directory read-only
// (RunOptions.ReadOnly).
type runGate struct{ dir string }

func newRunGate(t *testing.T) *runGate {
	t.Helper()
	base := t.TempDir()
	for d := base; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	g := &runGate{dir: filepath.Join(base, "gate")}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"started", "resume"} {
		p := filepath.Join(g.dir, name)
		// The jail's user (nobody, for a root server) reads them.
		if err := unix.Mkfifo(p, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// wait is the shell line a gated command begins with.
func (g *runGate) wait() string {
	return fmt.Sprintf("cat %s/started >/dev/null; cat %s/resume >/dev/null; ", g.dir, g.dir)
}

// started returns once the run has reached its command.
func (g *runGate) started(t *testing.T) { g.signal(t, "started") }

// resume lets the run go on.
func (g *runGate) resume(t *testing.T) { g.signal(t, "resume") }

// signal opens the FIFO name for writing, which returns once the command
// opens it for reading, and closes it: the command's cat ends.
func (g *runGate) signal(t *testing.T, name string) {
	t.Helper()
	p := filepath.Join(g.dir, name)
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err == nil {
			err = f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		// A reader of our own lets the open return.
		if f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			<-opened
			f.Close()
		}
		t.Fatalf("the run did not open %s in 2 minutes", name)
	}
}

// Edits another tool makes while a command runs are never overwritten.
func TestRunKeepsEditsMadeDuringIt(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	g := newRunGate(t)
	e := runEnv(t, r, session.RunOptions{ReadOnly: []string{g.dir}}, config{})
	done := make(chan session.RunResult)
	go func() {
		res, err := e.s.Run(context.Background(), session.RunArgs{Command: g.wait() + "echo from-run > README.md"}, nil)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	g.started(t)
	e.write(t, "README.md", "from-the-worker\n")
	g.resume(t)
	res := <-done
	if b, _ := e.s.Workspace().ReadFile("README.md"); string(b) != "from-the-worker\n" {
		t.Errorf("README.md = %q: the run overwrote an edit made during it", b)
	}
	if len(res.Refused) != 1 || res.Refused[0].Path != "README.md" {
		t.Errorf("refused %v", res.Refused)
	}
}

// Read-only mode: runs see the workspace, their writes are discarded.
func TestRunReadOnlyMode(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := runEnv(t, r, session.RunOptions{Mode: session.RunReadOnly}, config{})
	res, err := e.s.Run(context.Background(), session.RunArgs{Command: "cat README.md; echo x > new.txt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "# p\n" || res.Discarded != 1 {
		t.Errorf("%+v", res)
	}
	if _, err := e.s.Workspace().Lstat("new.txt"); err == nil {
		t.Error("a read-only run wrote into the workspace")
	}
}

// Real work beyond Go: make, and a Python test run, each with its result
// landing in the workspace.
func TestRunMakeAndPython(t *testing.T) {
	for _, tool := range []string{"/usr/bin/make", "/usr/bin/python3"} {
		// The jail sees the system's /usr, not a user's own toolchains.
		if _, err := os.Stat(tool); err != nil {
			t.Skip(tool, " is not installed")
		}
	}
	r := repo(t, true, map[string]string{
		"Makefile":     "all: out/hello.txt\n\nout/hello.txt: hello.in\n\tmkdir -p out\n\ttr a-z A-Z < hello.in > $@\n",
		"hello.in":     "hello\n",
		"calc.py":      "def add(a, b):\n    return a + b\n",
		"test_calc.py": "import unittest\nimport calc\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 2), 4)\n\nif __name__ == '__main__':\n    unittest.main()\n",
	})
	e := runEnv(t, r, session.RunOptions{}, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}}})
	res, err := e.s.Run(context.Background(), session.RunArgs{Argv: []string{"make"}}, nil)
	if err != nil || res.Exit != 0 {
		t.Fatalf("make: %+v %v", res, err)
	}
	if b, _ := e.s.Workspace().ReadFile("out/hello.txt"); string(b) != "HELLO\n" {
		t.Errorf("out/hello.txt = %q", b)
	}
	res, err = e.s.Run(context.Background(), session.RunArgs{Command: "python3 -m unittest -v 2> unittest.log"}, nil)
	if err != nil || res.Exit != 0 {
		t.Fatalf("python: %+v %v", res, err)
	}
	if b, _ := e.s.Workspace().ReadFile("unittest.log"); !strings.Contains(string(b), "test_add") || !strings.Contains(string(b), "OK") {
		t.Errorf("unittest.log = %q", b)
	}
	if !slices.Contains(res.Created, "unittest.log") {
		t.Errorf("created %v", res.Created)
	}
	// The results are staged and pushed like any change.
	if _, err := e.s.Stage([]string{"out", "unittest.log"}, "Build and test results"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Push(context.Background(), "", "", nil); err != nil {
		t.Fatal(err)
	}
	if got := git(t, r, "show", "main:out/hello.txt"); got != "HELLO\n" {
		t.Errorf("pushed out/hello.txt = %q", got)
	}
}

// A run asks for the network: the request is in the reviewer's queue (and
// the ledger) before the run starts, with what the run will reach; allowed
// once, the run reaches the host's loopback listener the operator allowed
// (--run-allow-host); the scope decides whether the next run asks again:
// a grant for the command is for the same line in the same directory
// (issue 32: from another directory it asks again); a denial is repeated
// at once with the reviewer's reason.
func TestRunNetworkElevation(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("/usr/bin/python3 is not installed")
	}
	if _, err := exec.LookPath("slirp4netns"); err != nil {
		t.Skip("slirp4netns is not installed (apt-get install slirp4netns; .ci/run installs it)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	allowed := netip.MustParseAddrPort(ln.Addr().String())
	r := repo(t, true, map[string]string{"README.md": "# p\n", "sub/README.md": "# sub\n"})
	e := runEnv(t, r, session.RunOptions{AllowHosts: []netip.AddrPort{allowed}}, config{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	fetch := fmt.Sprintf(`python3 -c 'import socket; print(socket.create_connection(("127.0.0.1", %d), timeout=2).recv(100).decode())' > fetched.txt`, ln.Addr().(*net.TCPAddr).Port)
	run := func(network bool) (session.RunResult, error) {
		return e.s.Run(context.Background(), session.RunArgs{Command: fetch, Network: network, Reason: "download the test data"}, nil)
	}
	decide := func(d approval.Decision) {
		req := waitPending(t, e.gate, 1)[0]
		if req.Kind != approval.KindNetwork || req.Command != fetch && req.Command != "true" || req.Reason == "" ||
			len(req.Reach) != 1 || req.Reach[0] != allowed.String() {
			t.Errorf("the reviewer sees %+v", req)
		}
		d.Request = req.ID
		if _, err := e.gate.Resolve(d); err != nil {
			t.Error(err)
		}
	}
	// Without the network: refused inside.
	res, err := run(false)
	if err != nil || res.Exit == 0 {
		t.Fatalf("without the network the run reached the host: %+v %v", res, err)
	}
	// Allowed once.
	go decide(approval.Decision{Verdict: approval.Approve})
	res, err = run(true)
	if err != nil || res.Exit != 0 || res.NetworkBy != "once" {
		t.Fatalf("allowed once: %+v %v", res, err)
	}
	if b, _ := e.s.Workspace().ReadFile("fetched.txt"); string(b) != "hello from the host\n\n" {
		t.Errorf("fetched.txt = %q", b)
	}
	// Once means once: the next run asks again; this time for the command.
	go decide(approval.Decision{Verdict: approval.Approve, Scope: approval.ScopeCommand})
	if res, err = run(true); err != nil || res.NetworkBy != approval.ScopeCommand {
		t.Fatalf("allowed for the command: %+v %v", res, err)
	}
	if res, err = run(true); err != nil || res.NetworkBy != approval.ScopeCommand || len(e.gate.Pending()) != 0 {
		t.Fatalf("the command again asked again: %+v %v", res, err)
	}
	// The same line from another directory runs what is there: asked.
	go decide(approval.Decision{Verdict: approval.Approve})
	res, err = e.s.Run(context.Background(), session.RunArgs{Command: fetch, Cwd: "sub", Network: true, Reason: "download the test data"}, nil)
	if err != nil || res.NetworkBy != "once" {
		t.Fatalf("the command from another directory: %+v %v (want asked, and allowed once)", res, err)
	}
	// Another command, denied; asked again, denied at once.
	other := session.RunArgs{Command: "true", Network: true, Reason: "because"}
	go decide(approval.Decision{Verdict: approval.Reject, Reason: "no downloads today"})
	if _, err := e.s.Run(context.Background(), other, nil); !errors.Is(err, approval.ErrNetworkDenied) || !strings.Contains(err.Error(), "no downloads today") || strings.Contains(err.Error(), "push") {
		t.Fatalf("denied: %v", err)
	}
	if _, err := e.s.Run(context.Background(), other, nil); !errors.Is(err, approval.ErrNetworkDenied) || !strings.Contains(err.Error(), "no downloads today") || strings.Contains(err.Error(), "push") {
		t.Errorf("denied again: %v", err)
	}
	if n := pushRecords(t, e.l); n[ledger.KindRequest] != 5 || n[ledger.KindDecision] != 5 {
		t.Errorf("ledger %v: want every request and decision", n)
	}
}
