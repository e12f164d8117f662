//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/ptytest"
)

// runAirlock runs the binary with args, without a controlling terminal
// and with stdin from /dev/null, and returns what it wrote and its exit
// code.
func runAirlock(t *testing.T, env []string, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, airlockBinary(t), args...)
	cmd.Env = env
	cmd.Dir = dir
	// A new session has no controlling terminal: /dev/tty cannot be
	// opened, whatever terminal the tests run in.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("airlock %s did not finish in time\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), o.String(), e.String())
	}
	code = ptytest.ExitCode(err)
	if code < 0 {
		t.Fatalf("airlock %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), code
}

// The demo with --yes runs without a terminal and shows the log of what it
// pushed; it leaves nothing behind.
func TestDemoYes(t *testing.T) {
	requireGit(t)
	root := t.TempDir()
	env := isolatedEnv(t, root)
	cwd := t.TempDir()
	out, errOut, code := runAirlock(t, env, cwd, "demo", "--yes")
	if code != 0 {
		t.Fatalf("airlock demo --yes exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	mustContain(t, "airlock demo --yes", out,
		"one commit on main",
		`> worker calls write_file {"content":"API_KEY=oops","path":".env"}`,
		"refused: ", "rule deny-pattern",
		"--yes approves it",
		"pushed ",
		"git log --stat reports:",
		"Demo Writer: Add the Q3 report",
		"reports/q3.md | 6 ++++++",
		"1 file changed, 6 insertions(+)",
		"You: Start the project",
		"chain intact")
	// The log comes after the push, not before.
	if strings.Index(out, "pushed ") > strings.Index(out, "git log --stat reports:") {
		t.Errorf("the log is shown before the push:\n%s", out)
	}
	// The demo works in its own temporary directory and removes it; it
	// touches neither the working directory nor the state directory.
	for _, dir := range []string{cwd, root + "/tmp"} {
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			t.Errorf("the demo left %d entries in %s (first %s)", len(ents), dir, ents[0].Name())
		}
	}
	if _, err := os.Stat(root + "/state/airlock/ledger.jsonl"); err == nil {
		t.Errorf("the demo wrote to the user's ledger")
	}
}

// Without a terminal (and without --yes) the demo refuses, with exit code
// 4, and says how to run it.
func TestDemoNoTerminal(t *testing.T) {
	requireGit(t)
	root := t.TempDir()
	env := isolatedEnv(t, root)
	out, errOut, code := runAirlock(t, env, t.TempDir(), "demo")
	if code != 4 {
		t.Fatalf("airlock demo without a terminal exited %d, want 4\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	mustContain(t, "airlock demo without a terminal", errOut, "needs a terminal", "airlock demo --yes")
	if strings.Contains(out, "A repository at") {
		t.Errorf("the demo started without a terminal:\n%s", out)
	}
}

// A person runs the demo in a terminal: they look at the diff (through
// the pager, here cat), approve, and see the pushed log.
func TestDemoInPTY(t *testing.T) {
	requireGit(t)
	root := t.TempDir()
	env := isolatedEnv(t, root)
	cmd := exec.Command(airlockBinary(t), "demo")
	cmd.Env = env
	cmd.Dir = t.TempDir()
	p := ptytest.Start(t, cmd)
	scr := p.Screen

	at := scr.WaitFor(t, 0, "You are the reviewer", 30*time.Second)
	at = scr.WaitFor(t, at, "Commit: ", 20*time.Second)
	at = scr.WaitFor(t, at, "[?]help", 10*time.Second)
	prompt := scr.String()[:at]
	mustContain(t, "the demo's prompt", prompt[strings.LastIndex(prompt, "git_push"):],
		"Target: local:", "(branch: reports)", `"Add the Q3 report"`, "+ reports/q3.md", "[a]pprove", "[r]eject")

	// d: the full diff, full screen; q back to the keys.
	p.Press(t, "d")
	at = scr.WaitFor(t, at, "+++ b/reports/q3.md", 10*time.Second)
	at = scr.WaitFor(t, at, "+Costs fell 2%.", 10*time.Second)
	p.Press(t, "q")
	at = scr.WaitFor(t, at, "[?]help", 10*time.Second)

	// a: approve (and confirm, if the prompt asks).
	p.Press(t, "a")
	if got, pos := scr.WaitForAny(t, at, 10*time.Second, "Type yes to approve anyway", "pushed "); got != "pushed " {
		p.Press(t, "yes\r")
		scr.WaitFor(t, pos, "pushed ", 10*time.Second)
	}
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("airlock demo exited %d; the terminal shows:\n%s", code, scr.String())
	}
	rest := scr.String()[at:]
	mustContain(t, "after approving", rest,
		"git log --stat reports:", "Demo Writer: Add the Q3 report", "reports/q3.md | 6 ++++++", "chain intact")
	if strings.Contains(rest, "did not happen") {
		t.Errorf("the demo says the push did not happen:\n%s", rest)
	}
}

// Every command takes --help: it prints the command's usage and exits 0.
// Mistakes in usage exit 2.
func TestHelp(t *testing.T) {
	root := t.TempDir()
	env := isolatedEnv(t, root)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--help"}, []string{"Usage: airlock serve", "-worker", "-timeout", "-never-approve", "-auto-approve", "-http"}},
		{[]string{"serve", "-h"}, []string{"Usage: airlock serve"}},
		{[]string{"review", "--help"}, []string{"Usage: airlock review", "-once"}},
		{[]string{"ledger", "--help"}, []string{"Usage: airlock ledger verify", "airlock ledger show"}},
		{[]string{"ledger", "verify", "--help"}, []string{"Usage: airlock ledger verify", "-file"}},
		{[]string{"ledger", "show", "--help"}, []string{"Usage: airlock ledger show", "-n", "-file"}},
		{[]string{"demo", "--help"}, []string{"Usage: airlock demo", "-yes"}},
		{[]string{"version", "--help"}, []string{"Usage: airlock version"}},
		{[]string{"sessions", "prune", "--help"}, []string{"Usage: airlock sessions prune", "-older-than", "-force", "-dry-run", "never deleted"}},
		{[]string{"cache", "--help"}, []string{"Usage: airlock cache list", "airlock cache clear", "--run-cache-size"}},
		{[]string{"cache", "show", "--help"}, []string{"Usage: airlock cache show [ID] [--worker FILE]", "-worker"}},
		{[]string{"help"}, []string{"Usage:", "airlock serve", "airlock review", "airlock ledger", "airlock demo", "airlock version", "Exit codes"}},
		{[]string{"--help"}, []string{"Usage:", "airlock demo"}},
		{[]string{"-h"}, []string{"Usage:", "airlock demo"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runAirlock(t, env, dir, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			mustContain(t, "airlock "+strings.Join(tc.args, " "), out+errOut, tc.want...)
			if strings.Contains(errOut, "airlock: ") {
				t.Errorf("--help is reported as an error:\n%s", errOut)
			}
		})
	}

	out, _, code := runAirlock(t, env, dir, "version")
	if code != 0 || !strings.HasPrefix(out, "airlock ") {
		t.Errorf("airlock version: exit %d, %q", code, out)
	}

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"Usage:"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, "Usage:", "airlock serve"}},
		{[]string{"serve", "--no-such-flag"}, []string{"-no-such-flag"}},
		{[]string{"serve", "extra"}, []string{"serve takes no arguments"}},
		{[]string{"review", "extra"}, []string{"review takes no arguments"}},
		{[]string{"ledger"}, []string{"ledger needs verify or show"}},
		{[]string{"ledger", "frobnicate"}, []string{"use verify or show"}},
		{[]string{"ledger", "show", "-n", "many"}, []string{"invalid value"}},
		{[]string{"demo", "--no"}, []string{"-no"}},
		{[]string{"version", "extra"}, []string{"version takes no arguments"}},
		{[]string{"cache"}, []string{"cache needs list, show or clear"}},
		{[]string{"cache", "frobnicate"}, []string{"use list, show or clear"}},
		{[]string{"cache", "list", "extra"}, []string{"cache list takes no arguments"}},
		{[]string{"cache", "clear", "a", "b"}, []string{"cache clear takes no arguments"}},
		{[]string{"serve", "--run-cache-size", "lots"}, []string{"--run-cache-size lots", "0 to keep no cache"}},
		{[]string{"demo", "extra"}, []string{"demo takes no arguments"}},
		{[]string{"ledger", "verify", "my-ledger.jsonl"}, []string{"ledger verify takes no arguments", "--help"}},
		{[]string{"ledger", "show", "10"}, []string{"ledger show takes no arguments"}},
		{[]string{"sessions", "prune", "--older-than", "soon"}, []string{"--older-than soon", "7d"}},
	} {
		t.Run("usage error "+strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runAirlock(t, env, dir, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			mustContain(t, "airlock "+strings.Join(tc.args, " "), errOut, tc.want...)
		})
	}
}
