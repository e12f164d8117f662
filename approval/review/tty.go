package review

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// ErrCanceled: a read was cancelled because the request went away.
var ErrCanceled = errors.New("prompt cancelled")

// TTY is the Terminal of the controlling terminal (/dev/tty), the one a
// person at the keyboard uses, whatever stdin and stdout are.
type TTY struct {
	f     *os.File
	fd    int // read once through SyscallConn: f.Fd() would make f blocking, and Cancel's deadline would no longer interrupt a read
	r     *bufio.Reader
	color bool

	mu       sync.Mutex
	canceled bool
}

// OpenTTY opens the controlling terminal. It fails when the process has
// none: then nobody can be asked, and the caller must refuse.
func OpenTTY() (*TTY, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoTerminal, err)
	}
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(u uintptr) { fd = int(u) })
	}
	if fd < 0 || !term.IsTerminal(fd) {
		f.Close()
		return nil, ErrNoTerminal
	}
	color := os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	return &TTY{f: f, fd: fd, r: bufio.NewReader(f), color: color}, nil
}

// Close closes the terminal.
func (t *TTY) Close() error { return t.f.Close() }

func (t *TTY) Write(p []byte) (int, error) {
	// The terminal may be in raw mode between reads; write \r\n so lines
	// start at the left edge either way.
	return t.f.Write([]byte(strings.ReplaceAll(string(p), "\n", "\r\n")))
}

func (t *TTY) IsTerminal() bool { return term.IsTerminal(t.fd) }
func (t *TTY) Color() bool      { return t.color }

// Rows is the terminal's height (24 when it cannot be read), so that the
// summary fits it.
func (t *TTY) Rows() int {
	if _, h, err := term.GetSize(t.fd); err == nil && h > 0 {
		return h
	}
	return 24
}

// Cols is the terminal's width (80 when it cannot be read): a line longer
// than that takes more than one of the Rows.
func (t *TTY) Cols() int {
	if w, _, err := term.GetSize(t.fd); err == nil && w > 0 {
		return w
	}
	return 80
}

// Cancel makes a pending or later read return ErrCanceled: the request
// being shown went away.
func (t *TTY) Cancel() {
	t.mu.Lock()
	t.canceled = true
	t.mu.Unlock()
	t.f.SetReadDeadline(time.Now())
}

// Reset undoes Cancel for the next prompt.
func (t *TTY) Reset() {
	t.mu.Lock()
	t.canceled = false
	t.mu.Unlock()
	t.f.SetReadDeadline(time.Time{})
	t.r.Reset(t.f)
}

func (t *TTY) readErr(err error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.canceled || errors.Is(err, os.ErrDeadlineExceeded) {
		return ErrCanceled
	}
	return err
}

// ReadKey reads one key in raw mode, so the reviewer need not press Enter.
// Ctrl-C and Ctrl-D end the prompt without a decision.
func (t *TTY) ReadKey() (rune, error) {
	fd := t.fd
	state, err := term.MakeRaw(fd)
	if err != nil {
		return 0, err
	}
	r, _, err := t.r.ReadRune()
	term.Restore(fd, state)
	if err != nil {
		return 0, t.readErr(err)
	}
	switch r {
	case 3:
		return 0, errors.New("interrupted")
	case 4:
		return 0, io.EOF
	}
	if r >= ' ' && r != 0x7f {
		fmt.Fprintf(t, "%c\n", r) // echo the choice, for the record on screen
	}
	return r, nil
}

// ReadLine reads a line with the terminal's own line editing.
func (t *TTY) ReadLine(prompt string) (string, error) {
	io.WriteString(t, prompt)
	line, err := t.r.ReadString('\n')
	if err != nil {
		return "", t.readErr(err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// Page shows text through $PAGER (else less -R), or writes it straight to
// the terminal if no pager can run.
func (t *TTY) Page(text string) error {
	pager := os.Getenv("PAGER")
	if pager == "" {
		pager = "less -R"
	}
	// The pager gets a terminal file of its own: handing t.f to a child
	// process would make it blocking (os.StartProcess calls Fd), and then
	// Cancel could no longer interrupt a read.
	out, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		_, werr := io.WriteString(t, text)
		return werr
	}
	defer out.Close()
	cmd := exec.Command("sh", "-c", pager)
	cmd.Stdin = strings.NewReader(text)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		_, werr := io.WriteString(t, text)
		return werr
	}
	return nil
}
