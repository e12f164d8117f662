package review_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/internal/ptytest"
)

// TestPromptInPseudoTerminal drives the real prompt on a real terminal, as
// a reviewer would: it reads the screen and types keys.
func TestPromptInPseudoTerminal(t *testing.T) {
	out := filepath.Join(t.TempDir(), "decision.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPromptChild$")
	cmd.Env = append(os.Environ(), "AIRLOCK_PROMPT_CHILD="+out, "PAGER=cat", "TERM=xterm")
	p := ptytest.Start(t, cmd)
	scr := p.Screen
	const within = 10 * time.Second

	at := scr.WaitFor(t, 0, "help", within)
	if !strings.Contains(scr.String(), "report.md") || !strings.Contains(scr.String(), "Target: local:/path/to/project (branch: reports)") {
		t.Fatalf("the prompt did not show the push:\n%s", scr.String())
	}
	p.Press(t, "?")
	at = scr.WaitFor(t, at, "pick files: push only the files you choose", within)
	p.Press(t, "x")
	at = scr.WaitFor(t, at, "Unknown key", within)
	p.Press(t, "d") // the diff, full screen (view.go); q comes back
	at = scr.WaitFor(t, at, "+# Q3", within)
	p.Press(t, "q")
	at = scr.WaitFor(t, at, "[?]help", within)
	p.Press(t, "r")
	scr.WaitFor(t, at, "Reason", within)
	p.Press(t, "wrong quarter\r")
	if code := p.Wait(t, within); code != 0 {
		t.Fatalf("the prompt process exited %d\n%s", code, scr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var d approval.Decision
	json.Unmarshal(data, &d)
	if d.Verdict != approval.Reject || d.Reason != "wrong quarter" {
		t.Errorf("decision %+v", d)
	}
}

func TestPromptChild(t *testing.T) {
	out := os.Getenv("AIRLOCK_PROMPT_CHILD")
	if out == "" {
		t.Skip("run by TestPromptInPseudoTerminal")
	}
	tty, err := review.OpenTTY()
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	r := exampleRequest()
	r.Ref = "refs/heads/reports"
	r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	d, err := review.Prompt(tty, r)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(d)
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Without a controlling terminal there is nobody to ask.
func TestOpenTTYWithoutTerminal(t *testing.T) {
	if os.Getenv("AIRLOCK_NOTTY_CHILD") != "" {
		if _, err := review.OpenTTY(); err == nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenTTYWithoutTerminal$")
	cmd.Env = append(os.Environ(), "AIRLOCK_NOTTY_CHILD=1")
	cmd.SysProcAttr = noControllingTerminal()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("a process without a terminal opened one: %v\n%s", err, out)
	}
}

// TestCancelInterruptsARead: a request that goes away while its prompt is
// waiting for a key takes the prompt down, even after the pager has run
// (a child process given the terminal must not make it blocking).
func TestCancelInterruptsARead(t *testing.T) {
	out := filepath.Join(t.TempDir(), "result")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCancelChild$")
	cmd.Env = append(os.Environ(), "AIRLOCK_CANCEL_CHILD="+out, "PAGER=cat", "TERM=xterm")
	p := ptytest.Start(t, cmd)
	p.Screen.WaitFor(t, 0, "paged text", 10*time.Second)
	// Wait fails the test if Cancel does not interrupt the read.
	if code := p.Wait(t, 10*time.Second); code != 0 {
		t.Fatalf("child exited %d", code)
	}
	if got, _ := os.ReadFile(out); string(got) != "canceled" {
		t.Errorf("the read ended with %q", got)
	}
}

func TestCancelChild(t *testing.T) {
	out := os.Getenv("AIRLOCK_CANCEL_CHILD")
	if out == "" {
		t.Skip("run by TestCancelInterruptsARead")
	}
	tty, err := review.OpenTTY()
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	if err := tty.Page("paged text\n"); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, tty.Cancel)
	_, err = tty.ReadKey()
	result := "read returned " + fmt.Sprint(err)
	if errors.Is(err, review.ErrCanceled) {
		result = "canceled"
	}
	os.WriteFile(out, []byte(result), 0o600)
}
