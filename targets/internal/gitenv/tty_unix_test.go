//go:build linux

package gitenv_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/airlock-dev/airlock/targets/internal/gitenv"
)

// TestConfigReadsNoTerminal: a repository's config includes /dev/tty.
// airlock, started from a terminal (serve in the foreground, its reviewer
// typing there), reads that config; git must not read the terminal: it
// would wait for the keys typed there, take them as config, and keep
// them from whoever they were meant for. The test runs itself in a
// session whose controlling terminal is a pty, types config there, and
// looks whether ReadConfig and Command's git saw it, or a Neutral's, on a
// source whose objects/info/alternates is a symlink to /dev/tty.
func TestConfigReadsNoTerminal(t *testing.T) {
	if repo := os.Getenv("GITENV_TTY_REPO"); repo != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kv, err := gitenv.ReadConfig(ctx, repo)
		for _, p := range kv {
			fmt.Printf("%s=%s\n", p[0], p[1])
		}
		fmt.Printf("read: %v\n", err)
		cmd, err := gitenv.Command(ctx, repo, "config", "--get-all", "remote.origin.url")
		if err == nil {
			var out []byte
			out, err = cmd.Output()
			fmt.Printf("command: %s\n", out)
		}
		fmt.Printf("command: %v\n", err)
		// A source whose alternates file is the terminal, read through a
		// Neutral.
		n, err := gitenv.NewNeutral(os.Getenv("GITENV_TTY_SOURCE"))
		if err != nil {
			fmt.Printf("neutral: %v\n", err)
			return
		}
		defer n.Close()
		cat := n.Command(ctx, "cat-file", "-e", strings.Repeat("1", 40))
		out, err := cat.CombinedOutput()
		fmt.Printf("neutral: %s %v\n", out, err)
		return
	}
	repo := t.TempDir()
	git := exec.Command("git", "init", "-q", repo)
	git.Env = gitenv.Clean()
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	f, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("[include]\n\tpath = /dev/tty\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	source := t.TempDir()
	git = exec.Command("git", "init", "-q", "--bare", source)
	git.Env = gitenv.Clean()
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := os.Symlink("/dev/tty", filepath.Join(source, "objects", "info", "alternates")); err != nil {
		t.Fatal(err)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestConfigReadsNoTerminal$")
	cmd.Env = append(os.Environ(), "GITENV_TTY_REPO="+repo, "GITENV_TTY_SOURCE="+source)
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, ptmx) }() // the echo
	// What the reviewer types, once for each read (ReadConfig's,
	// Command's, the Neutral's), each line ended, then an end of input.
	typed := "[remote \"origin\"]\n\turl = typed-at-the-terminal\n\x04"
	for i := 0; i < 6; i++ {
		time.Sleep(200 * time.Millisecond)
		if _, err := ptmx.WriteString(typed); err != nil {
			break
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the helper: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the helper hung:\n%s", out.String())
	}
	if strings.Contains(out.String(), "typed-at-the-terminal") {
		t.Errorf("git read the repository's config from the terminal:\n%s", out.String())
	}
}
