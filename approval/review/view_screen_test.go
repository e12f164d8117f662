package review_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review"
)

// viewTerm is the prompt running in a child process on a real
// pseudo-terminal, its output played into a VT emulator as it comes: the
// screen is what a person at that terminal sees.
type viewTerm struct {
	t    *testing.T
	pty  *os.File
	mu   sync.Mutex
	vt   vt10x.Terminal
	raw  bytes.Buffer
	proc *os.Process
	done chan error
}

// startView runs the prompt for r in a child on a cols x rows terminal,
// with env added (TERM=xterm unless env says otherwise).
func startView(t *testing.T, r *approval.Request, cols, rows int, env ...string) *viewTerm {
	t.Helper()
	req := filepath.Join(t.TempDir(), "request.json")
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(req, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestViewChild$")
	// The reviewer's state (the viewed marks) is the test's own, unless
	// env names another: a re-review's second run shares the first's.
	cmd.Env = append(os.Environ(), "AIRLOCK_VIEW_CHILD="+req, "PAGER=cat", "TERM=xterm", "NO_COLOR=", "AIRLOCK_STATE_DIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	v := &viewTerm{t: t, pty: f, vt: vt10x.New(vt10x.WithSize(cols, rows)), done: make(chan error, 1)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			v.mu.Lock()
			v.raw.Write(buf[:n])
			v.vt.Write(buf[:n])
			v.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	v.proc = cmd.Process
	go func() { v.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		f.Close()
		<-read
		if t.Failed() {
			t.Logf("the terminal shows:\n%s", v.screen())
		}
	})
	return v
}

func (v *viewTerm) screen() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.vt.String()
}

func (v *viewTerm) output() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.raw.String()
}

func (v *viewTerm) press(keys string) {
	v.t.Helper()
	if _, err := v.pty.Write([]byte(keys)); err != nil {
		v.t.Fatalf("typing %q: %v", keys, err)
	}
}

// waitFor waits until the screen shows text.
func (v *viewTerm) waitFor(text string) {
	v.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(v.screen(), text) {
		if time.Now().After(deadline) {
			v.t.Fatalf("the screen never showed %q; it shows:\n%s", text, v.screen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// golden waits until the screen is the golden file's (with -update:
// until it shows marker and has settled, then writes it).
func (v *viewTerm) golden(name, marker string) {
	v.t.Helper()
	path := filepath.Join("testdata", "view", name+".golden")
	if *update {
		v.waitFor(marker)
		time.Sleep(300 * time.Millisecond)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			v.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(v.screen()), 0o644); err != nil {
			v.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		v.t.Fatalf("%v (run with -update)", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for v.screen() != string(want) {
		if time.Now().After(deadline) {
			v.t.Fatalf("the screen differs from %s; it shows:\n%s\nwant:\n%s", path, v.screen(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// resize changes the terminal's size, as a person dragging the window
// does: the child gets SIGWINCH.
func (v *viewTerm) resize(cols, rows int) {
	v.t.Helper()
	v.mu.Lock()
	v.vt.Resize(cols, rows)
	v.mu.Unlock()
	if err := pty.Setsize(v.pty, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		v.t.Fatal(err)
	}
}

// reversed is the text shown in reverse video on the row that shows
// line.
func (v *viewTerm) reversed(line string) string {
	v.t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	cols, rows := v.vt.Size()
	for y := 0; y < rows; y++ {
		var row, rev []rune
		for x := 0; x < cols; x++ {
			g := v.vt.Cell(x, y)
			row = append(row, g.Char)
			if g.Mode&1 != 0 { // vt10x's attrReverse
				rev = append(rev, g.Char)
			}
		}
		if strings.Contains(string(row), line) {
			return string(rev)
		}
	}
	v.t.Fatalf("no row shows %q", line)
	return ""
}

// reject answers the prompt r, with no reason, and checks that the
// prompt took it: the view left the prompt able to decide.
func (v *viewTerm) reject() {
	v.t.Helper()
	v.press("r")
	v.waitFor("Reason")
	v.press("\r")
	if got := v.decision(); got != "reject" {
		v.t.Errorf("the decision after the view: %q, want reject", got)
	}
}

// decision waits for the child to end and returns what it decided.
func (v *viewTerm) decision() string {
	v.t.Helper()
	select {
	case err := <-v.done:
		if err != nil {
			v.t.Fatalf("the prompt's process: %v", err)
		}
	case <-time.After(10 * time.Second):
		v.t.Fatal("the prompt did not end")
	}
	// What the child wrote last may still be on its way from the pty.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(v.output(), "DECISION:") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	_, after, _ := strings.Cut(v.output(), "DECISION:")
	verdict, _, _ := strings.Cut(after, "\n")
	return strings.TrimSpace(verdict)
}

// TestViewChild is the prompt the screen tests run on a pseudo-terminal.
func TestViewChild(t *testing.T) {
	r, tty := childRequest(t, "AIRLOCK_VIEW_CHILD", "the view's screen tests")
	// SIGUSR1 is the request going away while it is shown: the review
	// loop cancels the prompt so.
	usr := make(chan os.Signal, 1)
	signal.Notify(usr, syscall.SIGUSR1)
	go func() {
		<-usr
		tty.Cancel()
	}()
	d, err := review.Prompt(tty, r)
	if errors.Is(err, review.ErrCanceled) {
		tty.Write([]byte("DECISION: canceled\n"))
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	tty.Write([]byte("DECISION: " + string(d.Verdict) + "\n"))
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	tty.Write([]byte("DECIDED: " + string(data) + "\n"))
}

// viewEscapes are the escape sequences the view itself writes: the
// alternate screen, cursor position and visibility, erasing a row, and
// SGR attributes. The prompt writes only SGR.
var viewEscapes = regexp.MustCompile(`\x1b\[(\?1049[hl]|\?25[hl]|[0-9]+;1H|2K|[0-9]+G|[0-9;]*m)`)

// assertOnlyViewEscapes fails when anything but airlock's own escapes
// reached the terminal.
func assertOnlyViewEscapes(t *testing.T, out string) {
	t.Helper()
	rest := viewEscapes.ReplaceAllString(out, "")
	for i, r := range rest {
		switch r {
		case '\x1b', '\x07', '\u009b', '\u202e', '\u2066', utf8.RuneError:
			t.Errorf("a foreign control character reached the terminal: %q", rest[max(0, i-30):min(len(rest), i+40)])
			return
		}
	}
}
