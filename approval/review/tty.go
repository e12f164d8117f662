package review

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/airlock-dev/airlock/approval/review/internal/diffview"
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
	resized  bool // the terminal changed size since the last raw read
	// Announcements (tty_notice.go): what is being read, whether the
	// full-screen view is up, the last one, those not yet shown.
	reading int
	viewing bool
	notice  string
	queued  []string
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

// FullScreen reports whether the terminal can show a full-screen view:
// a terminal of a known size, and TERM names one that is not dumb.
func (t *TTY) FullScreen() bool {
	_, _, ok := t.Size()
	tm := os.Getenv("TERM")
	return ok && tm != "" && tm != "dumb" && t.IsTerminal()
}

// Size is the terminal's, in cells; not ok when it cannot be read.
func (t *TTY) Size() (cols, rows int, ok bool) {
	w, h, err := term.GetSize(t.fd)
	return w, h, err == nil && w > 0 && h > 0
}

// Raw puts the terminal in raw mode (keys one at a time, no echo) until
// restore.
func (t *TTY) Raw() (restore func(), err error) {
	state, err := term.MakeRaw(t.fd)
	if err != nil {
		return nil, err
	}
	// A terminal that cannot be restored is one that went away.
	return func() { _ = term.Restore(t.fd, state) }, nil
}

// ReadByte reads one byte as it comes (the terminal in raw mode); it
// returns diffview.ErrResized when the terminal changed size meanwhile, and
// ErrCanceled as ReadKey does.
func (t *TTY) ReadByte() (byte, error) {
	// Bytes already read go first: they may be the rest of a key's
	// escape sequence.
	if t.r.Buffered() == 0 && t.takeResized() {
		return 0, diffview.ErrResized
	}
	c, err := t.r.ReadByte()
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && t.takeResized() {
		return 0, diffview.ErrResized
	}
	if err != nil {
		return 0, t.readErr(err)
	}
	return c, nil
}

// takeResized reports, once, that the terminal changed size (never
// after Cancel, which wins), and lifts the deadline that interrupted the
// read. The flag and the deadline change together under mu, as Cancel
// changes them, so that neither undoes the other's.
func (t *TTY) takeResized() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.resized && !t.canceled
	if r {
		t.resized = false
		// Setting a deadline fails only on a closed terminal, whose
		// next read says so.
		_ = t.f.SetReadDeadline(time.Time{})
	}
	return r
}

// Buffered is how many bytes arrived that were not read yet.
func (t *TTY) Buffered() int { return t.r.Buffered() }

// WatchResize interrupts a pending ReadByte (through the read deadline,
// as Cancel does) when the terminal changes size, until stop.
func (t *TTY) WatchResize() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	t.mu.Lock()
	t.viewing = true // an announcement redraws the view (tty_notice.go)
	t.mu.Unlock()
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-ch:
				t.mu.Lock()
				if !t.canceled {
					t.resized = true
					_ = t.f.SetReadDeadline(time.Now()) // as in takeResized
				}
				t.mu.Unlock()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		<-exited
		// A resize not yet read must not cancel the prompt's next read.
		t.mu.Lock()
		t.viewing = false
		if t.resized && !t.canceled {
			t.resized = false
			_ = t.f.SetReadDeadline(time.Time{}) // as in takeResized
		}
		t.mu.Unlock()
	}
}

// ReadKey reads one key in raw mode, so the reviewer need not press Enter.
// Ctrl-C and Ctrl-D end the prompt without a decision.
func (t *TTY) ReadKey() (rune, error) {
	fd := t.fd
	state, err := term.MakeRaw(fd)
	if err != nil {
		return 0, err
	}
	t.startReading(readingKey)
	r, _, err := t.r.ReadRune()
	t.doneReading()
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
	t.startReading(readingLine)
	io.WriteString(t, prompt)
	line, err := t.r.ReadString('\n')
	t.doneReading()
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
