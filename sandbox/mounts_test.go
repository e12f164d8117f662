package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/sandbox"
)

// runSpec runs script in j's jail with spec changed by edit, and returns
// its exit code and its stdout and stderr.
func (j *jail) runSpec(script string, edit func(*sandbox.Spec)) (int, string, string) {
	j.t.Helper()
	lower, upper, work, root := j.m.Dirs()
	spec := sandbox.Spec{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + sandbox.Home},
		Lower: lower, Upper: upper, Work: work, Root: root}
	edit(&spec)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, err := sandbox.Run(ctx, spec, nil, &stdout, &stderr)
	if err != nil {
		j.t.Fatalf("run %q: %v\nstderr: %s", script, err, stderr.String())
	}
	if err := j.m.Reset(); err != nil {
		j.t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// A run with the network sees the host's resolver configuration, each file
// as its content (through a symlink, where it is one), but for resolv.conf:
// its nameserver is the server's relay to the host's resolver (10.0.2.3),
// the host's search domains and options kept; it resolves names. A run
// without it sees none of the host's, and still resolves its own host
// names from its own files.
func TestResolverOnlyWithTheNetwork(t *testing.T) {
	j := newJail(t, map[string]string{"a.txt": "a\n"})
	files := []string{"resolv.conf", "nsswitch.conf", "hosts", "gai.conf"}
	show := "for f in " + strings.Join(files, " ") + "; do if [ -e /etc/$f ]; then echo \"== $f\"; cat /etc/$f; else echo \"== $f absent\"; fi; done"
	host := func(f string) string {
		b, err := os.ReadFile("/etc/" + f)
		if err != nil {
			return "== " + f + " absent\n"
		}
		return "== " + f + "\n" + string(b)
	}

	code, out, errOut := j.runSpec(show, func(s *sandbox.Spec) { s.Network = true })
	want := "== resolv.conf\nnameserver 10.0.2.3\n"
	if hostConf, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		for _, l := range strings.Split(string(hostConf), "\n") {
			if f := strings.Fields(l); len(f) > 0 && (f[0] == "search" || f[0] == "domain" || f[0] == "options") {
				want += strings.Join(f, " ") + "\n"
			}
		}
	}
	for _, f := range files[1:] {
		want += host(f)
	}
	if code != 0 || out != want {
		t.Errorf("with the network: exit %d, stderr %q\ngot:\n%s\nwant the host's:\n%s", code, errOut, out, want)
	}
	if code, out, _ := j.runSpec("echo x >> /etc/resolv.conf", func(s *sandbox.Spec) { s.Network = true }); code == 0 {
		t.Errorf("a run with the network wrote the resolver configuration: %s", out)
	}

	code, out, errOut = j.runSpec(show, func(*sandbox.Spec) {})
	if code != 0 || !strings.Contains(out, "== resolv.conf absent\n") || !strings.Contains(out, "== gai.conf absent\n") ||
		!strings.Contains(out, "== hosts\n127.0.0.1 localhost airlock\n") || !strings.Contains(out, "hosts: files\n") {
		t.Errorf("without the network: exit %d, stderr %q, saw:\n%s", code, errOut, out)
	}
	if host("resolv.conf") != "== resolv.conf absent\n" && strings.Contains(out, host("resolv.conf")) {
		t.Errorf("the host's resolv.conf is in a run without the network:\n%s", out)
	}

	if _, err := exec.LookPath("getent"); err != nil {
		t.Skip("getent is not installed")
	}
	for _, network := range []bool{true, false} {
		code, out, errOut := j.runSpec("getent hosts localhost", func(s *sandbox.Spec) { s.Network = network })
		if code != 0 || !strings.Contains(out, "localhost") {
			t.Errorf("network %v: getent hosts localhost: exit %d, %q %q", network, code, out, errOut)
		}
	}
}

// privateDir is a directory under one only this process's user may enter
// (as /root is), and what is in it is open to the jail's user: what a root
// server's state directory and a module cache in its home look like.
func privateDir(t *testing.T, mode os.FileMode) string {
	t.Helper()
	outer := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(outer, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(outer, "inner")
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The cache and the read-only paths reach the jail even when they lie
// under a directory the jail's user may not enter (a root server's /root):
// the cache read-write, the read-only path read-only, and nothing beside
// them.
func TestPrivatePathsReachTheJail(t *testing.T) {
	j := newJail(t, map[string]string{"a.txt": "a\n"})
	uid, gid := sandbox.HostUser()
	cache := privateDir(t, 0o700)
	if err := os.Chown(cache, uid, gid); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(filepath.Dir(cache), "beside.txt"), []byte("not for runs\n"), 0o644)
	ro := privateDir(t, 0o755)
	os.WriteFile(filepath.Join(ro, "mod.txt"), []byte("module\n"), 0o644)

	script := "echo built > $HOME/.cache/out.txt && cat " + filepath.Join(ro, "mod.txt") +
		" && if echo x > " + filepath.Join(ro, "w.txt") + " 2>/dev/null; then echo WROTE-RO; fi" +
		" && if cat " + filepath.Join(filepath.Dir(cache), "beside.txt") + " 2>/dev/null; then echo SAW-BESIDE; fi"
	code, out, errOut := j.runSpec(script, func(s *sandbox.Spec) {
		s.Cache = cache
		s.ReadOnly = []string{ro}
	})
	if code != 0 || out != "module\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(cache, "out.txt")); err != nil || string(b) != "built\n" {
		t.Errorf("the cache on the host holds %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(ro, "w.txt")); err == nil {
		t.Error("the read-only path was written")
	}
}

// A root server refuses, at start, a read-only path its commands (nobody)
// could not read; a server running as its commands' user checks nothing.
func TestCheckReachable(t *testing.T) {
	open := privateDir(t, 0o755)
	closed := privateDir(t, 0o700)
	file := filepath.Join(open, "f")
	os.WriteFile(file, nil, 0o600)
	asRoot := os.Getuid() == 0
	for _, c := range []struct {
		path    string
		refused bool
	}{
		{open, false},
		{closed, asRoot},
		{file, asRoot},
	} {
		err := sandbox.CheckReachable(c.path)
		if got := errors.Is(err, sandbox.ErrUnreachable); got != c.refused {
			t.Errorf("%s: %v, want refused %v", c.path, err, c.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "chmod o+rX "+c.path) {
			t.Errorf("%s: the error does not say what to do: %v", c.path, err)
		}
	}
}
