package ptytest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// Screen is what a pseudo-terminal shows, collected as it comes.
type Screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

var ansiRe = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// String is the text shown, without colours and carriage returns.
func (s *Screen) String() string {
	s.mu.Lock()
	raw := s.buf.String()
	s.mu.Unlock()
	return strings.ReplaceAll(ansiRe.ReplaceAllString(raw, ""), "\r", "")
}

// WaitFor waits until the screen shows text after position from (of
// String), and returns the position just after it.
func (s *Screen) WaitFor(t *testing.T, from int, text string, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out := s.String()
		if from > len(out) {
			from = len(out)
		}
		if i := strings.Index(out[from:], text); i >= 0 {
			return from + i + len(text)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q (after position %d) within %v; it shows:\n%s", text, from, within, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitForAny waits until the screen shows one of texts after from, and
// returns which and the position after it.
func (s *Screen) WaitForAny(t *testing.T, from int, within time.Duration, texts ...string) (string, int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out := s.String()
		best, bestAt := "", -1
		if from > len(out) {
			from = len(out)
		}
		for _, text := range texts {
			if i := strings.Index(out[from:], text); i >= 0 && (bestAt < 0 || i < bestAt) {
				best, bestAt = text, i
			}
		}
		if bestAt >= 0 {
			return best, from + bestAt + len(best)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed any of %q within %v; it shows:\n%s", texts, within, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Process is a command running in a pseudo-terminal, as a person at a
// terminal runs it.
type Process struct {
	cmd    *exec.Cmd
	f      *os.File
	Screen *Screen
	done   chan struct{}
	err    error // cmd.Wait's, once done is closed
}

// Start starts cmd with a new pseudo-terminal as its controlling
// terminal and reads what it shows. The process is killed at cleanup if it
// is still running.
func Start(t *testing.T, cmd *exec.Cmd) *Process {
	t.Helper()
	return StartSize(t, cmd, 50, 200)
}

// StartSize is Start on a terminal of rows by cols.
func StartSize(t *testing.T, cmd *exec.Cmd, rows, cols uint16) *Process {
	t.Helper()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	p := &Process{cmd: cmd, f: f, Screen: &Screen{}, done: make(chan struct{})}
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			p.Screen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		f.Close()
		<-read
		if t.Failed() {
			t.Logf("the terminal of %s showed:\n%s", filepath.Base(cmd.Path), p.Screen.String())
		}
	})
	return p
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Press types keys at the terminal.
func (p *Process) Press(t *testing.T, keys string) {
	t.Helper()
	if _, err := p.f.Write([]byte(keys)); err != nil {
		t.Fatalf("typing %q: %v", keys, err)
	}
}

// Wait waits for the process to exit and returns its exit code.
func (p *Process) Wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("%s did not exit within %v; its terminal shows:\n%s", filepath.Base(p.cmd.Path), within, p.Screen.String())
	}
	return ExitCode(p.err)
}

// ExitCode is a finished command's exit status; -1 when it did not exit.
func ExitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}
