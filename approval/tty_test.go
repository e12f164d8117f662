package approval_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/airlock-dev/airlock/approval"
)

// screen collects what a pty shows.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the screen shows text after position from, and
// returns the position after it.
func (s *screen) waitFor(t *testing.T, from int, text string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out := s.String()
		if i := strings.Index(out[from:], text); i >= 0 {
			return from + i + len(text)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the screen never showed %q; it shows:\n%s", text, s.String())
	return 0
}

// TestPromptInPseudoTerminal drives the real prompt on a real terminal, as
// a reviewer would: it reads the screen and types keys.
func TestPromptInPseudoTerminal(t *testing.T) {
	out := filepath.Join(t.TempDir(), "decision.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPromptChild$")
	cmd.Env = append(os.Environ(), "AIRLOCK_PROMPT_CHILD="+out, "PAGER=cat", "TERM=xterm")
	f, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer f.Close()
	var scr screen
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			scr.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()

	at := scr.waitFor(t, 0, "help")
	if !strings.Contains(scr.String(), "report.md") || !strings.Contains(scr.String(), "Target: local:/path/to/project (branch: reports)") {
		t.Fatalf("the prompt did not show the push:\n%s", scr.String())
	}
	f.Write([]byte("?"))
	at = scr.waitFor(t, at, "pick files: push only the files you choose")
	f.Write([]byte("x"))
	at = scr.waitFor(t, at, "Unknown key")
	f.Write([]byte("d")) // the pager is cat: the diff scrolls by
	at = scr.waitFor(t, at, "+# Q3")
	f.Write([]byte("r"))
	at = scr.waitFor(t, at, "Reason")
	f.Write([]byte("wrong quarter\r"))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the prompt process failed: %v\n%s", err, scr.String())
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
	tty, err := approval.OpenTTY()
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	r := exampleRequest()
	r.Ref = "refs/heads/reports"
	r.Flags = approval.Assess(r, approval.Rules{}, nil)
	d, err := approval.Prompt(tty, r)
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
		if _, err := approval.OpenTTY(); err == nil {
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
	f, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer f.Close()
	var scr screen
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			scr.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	scr.waitFor(t, 0, "paged text")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("child: %v\n%s", err, scr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("Cancel did not interrupt the read; the screen:\n%s", scr.String())
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
	tty, err := approval.OpenTTY()
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
	if errors.Is(err, approval.ErrCanceled) {
		result = "canceled"
	}
	os.WriteFile(out, []byte(result), 0o600)
}
