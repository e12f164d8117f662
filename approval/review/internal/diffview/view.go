package diffview

import (
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// Terminal is what the full-screen view needs of a terminal: raw bytes
// (arrow keys are escape sequences), its size, and word when that size
// changes. The reviewer's TTY (approval/review) is one.
type Terminal interface {
	io.Writer
	// Color reports whether to use ANSI colours.
	Color() bool
	// FullScreen reports whether the terminal can show a full-screen
	// view: a terminal, of a known size, whose TERM is not dumb.
	FullScreen() bool
	Size() (cols, rows int, ok bool)
	// Raw puts the terminal in raw mode until restore.
	Raw() (restore func(), err error)
	// ReadByte reads one byte in raw mode; ErrResized when the
	// terminal changed size while it waited (see WatchResize).
	ReadByte() (byte, error)
	// Buffered is how many bytes have arrived and not been read: the
	// rest of an escape sequence, or nothing after a lone Esc.
	Buffered() int
	// WatchResize makes ReadByte return ErrResized when the terminal
	// changes size, until stop.
	WatchResize() (stop func())
}

// ErrResized: a read was interrupted because the terminal changed size.
var ErrResized = errors.New("the terminal changed size")

// Words are the prompt's names for what the view shows beside the diff,
// so that both say the same: a flag's short label, and a severity's
// marker ("!!", "! ").
type Words struct {
	Label  func(approval.Flag) string
	Marker func(approval.Severity) string
	// Notice, when not nil, is a line for the status row, first (a new
	// request waiting); "" for none. The terminal interrupts the read
	// (ErrResized) when it changes, so that it is drawn at once.
	Notice func() string
}

// Options are what the view says besides the diff.
type Options struct {
	Words Words
	// Shown is what the header says is shown: "Whole push", "Commit 2
	// of 3", "Interdiff since request req-1".
	Shown string
	// Spaced is the review to show with whitespace ignored (true) or
	// not (the one given to Show): the w key. nil: no w.
	Spaced func(ignore bool) *model.Review
	// IgnoreSpace opens the view with whitespace ignored, as w would: the
	// prompt's w said the diff ignores it, and d must not say otherwise.
	IgnoreSpace bool
}

// Show shows m's diff full screen, where the reviewer reads it, picks
// from it, comments on it, and decides, until they decide or press q;
// what they picked and wrote is in m. It reports false, having shown
// nothing, where a full screen cannot be shown (TERM=dumb, no size, no
// raw mode); the caller pages the diff then. An error is the terminal's
// (a read cancelled, ^C, a write that failed), after the screen is
// restored.
func Show(t Terminal, m *model.Review, o Options) (bool, Outcome, error) {
	if !t.FullScreen() {
		return false, Outcome{}, nil
	}
	cols, rows, ok := t.Size()
	if !ok {
		return false, Outcome{}, nil
	}
	restore, err := t.Raw()
	if err != nil {
		return false, Outcome{}, nil
	}
	defer restore()
	stop := t.WatchResize()
	defer stop()
	if _, err := io.WriteString(t, escEnter); err != nil {
		return true, Outcome{}, err
	}
	defer io.WriteString(t, escLeave)
	v := newDiffView(newDiffIndex(m, o.Words), cols, rows, t.Color())
	v.shown, v.words, v.spaced = o.Shown, o.Words, o.Spaced
	v.notice = o.Words.Notice
	v.hi = newRender(v.ix, ColorsOf(t))
	if o.IgnoreSpace {
		v.toggleSpace()
	}
	// What was written with whitespace ignored is the review's too.
	defer func() {
		if v.ix.m != m {
			_ = m.SetComments(v.ix.m.Comments()) // each was checked when written
		}
	}()
	for {
		if _, err := t.Write(v.frame()); err != nil {
			return true, Outcome{}, err
		}
		k, err := readViewKey(t)
		switch {
		case errors.Is(err, ErrResized):
			if c, r, ok := t.Size(); ok {
				v.resize(c, r)
			}
			continue
		case err != nil:
			return true, Outcome{}, err
		}
		if v.handle(k) {
			return true, v.outcome, nil
		}
	}
}

// The keys that arrive as escape sequences, as runes no keyboard types.
const (
	keyUp rune = -1 - iota
	keyDown
	keyLeft
	keyRight
	keyPgUp
	keyPgDn
	keyHome
	keyEnd
	keyEsc
	keyNone // a sequence the view has no use for
)

// readViewKey reads one key: a character, or an escape sequence read
// whole so that its bytes are not taken for keys. A lone Esc is one with
// nothing after it yet.
func readViewKey(t Terminal) (rune, error) {
	c, err := t.ReadByte()
	if err != nil {
		return 0, err
	}
	switch {
	case c == 3:
		return 0, errors.New("interrupted")
	case c == 0x1b:
		return readEscape(t)
	case c < utf8.RuneSelf:
		return rune(c), nil
	}
	// A character of several bytes: the rest follows at once.
	p := []byte{c}
	for len(p) < utf8.UTFMax && !utf8.FullRune(p) && t.Buffered() > 0 {
		c, err := t.ReadByte()
		if err != nil {
			return 0, err
		}
		p = append(p, c)
	}
	r, _ := utf8.DecodeRune(p)
	return r, nil
}

func readEscape(t Terminal) (rune, error) {
	if t.Buffered() == 0 {
		return keyEsc, nil
	}
	intro, err := t.ReadByte()
	if err != nil || intro != '[' && intro != 'O' {
		return keyNone, err
	}
	var params []byte
	for t.Buffered() > 0 {
		c, err := t.ReadByte()
		if err != nil {
			return 0, err
		}
		if c < 0x40 || c > 0x7e {
			params = append(params, c)
			continue
		}
		switch c {
		case 'A':
			return keyUp, nil
		case 'B':
			return keyDown, nil
		case 'C':
			return keyRight, nil
		case 'D':
			return keyLeft, nil
		case 'H':
			return keyHome, nil
		case 'F':
			return keyEnd, nil
		case '~':
			switch string(params) {
			case "5":
				return keyPgUp, nil
			case "6":
				return keyPgDn, nil
			case "1", "7":
				return keyHome, nil
			case "4", "8":
				return keyEnd, nil
			}
		}
		return keyNone, nil
	}
	return keyNone, nil
}

// handle acts on key; true when the reviewer is done with the view.
func (v *diffView) handle(k rune) bool {
	v.msg = ""
	switch v.mode {
	case modeSearch:
		v.handleSearch(k)
		return false
	case modeList:
		v.handleList(k)
		return false
	case modeInput:
		return v.handleInput(k)
	case modeComments:
		v.handleComments(k)
		return false
	case modeHelp:
		v.mode = modeDiff // any key closes the help
		return false
	}
	if v.move(k) {
		return false
	}
	switch k {
	case 'q', 'Q':
		// Not Esc: an arrow key's bytes split by a slow link would
		// read as Esc, and the rest of them would reach the prompt.
		return true
	case 'a':
		// Not A: the last byte of an arrow key split by a slow link.
		return v.approve()
	case 'r':
		v.mode, v.inputOf, v.input = modeInput, inputReason, v.input[:0]
	case 'y', 'x':
		v.setHunk(k == 'y')
	case '+', '-':
		v.setLine(k == '+')
	case 'v':
		if v.mark >= 0 {
			v.mark, v.msg = -1, "range cleared"
		} else {
			v.mark, v.msg = v.cur, "range started: move to its end, then c comments on it (v clears it)"
		}
	case 'c':
		v.startComment()
	case 'C':
		v.mode = modeComments
		v.csel = max(0, min(v.csel, len(v.ix.m.Comments())-1))
	case 'm':
		v.toggleViewed()
	case '=':
		v.showCommit()
	case 'o', 'O':
		v.toggle()
	case 'w':
		v.toggleSpace()
	case 'f', 'F':
		v.mode, v.input = modeList, v.input[:0]
		v.sel, _ = v.at(v.cur)
		v.sel = min(v.sel, len(v.ix.order)-1)
	case '/':
		v.mode, v.input = modeSearch, v.input[:0]
	case 'n':
		v.search(true)
	case 'N':
		v.search(false)
	case 's', 'S':
		v.toggleSide()
	case '?', 'h':
		v.mode = modeHelp
	case 'A', 'R', 'P', 'p':
		v.msg = "a approves (what you left out with x stays out), r rejects, q goes back to the prompt"
	case keyEsc:
		v.mark = -1
	case keyNone:
	default:
		v.msg = "unknown key " + quoteLine(string(k)) + ": press ? for the keys"
	}
	return false
}

// move acts on the keys that move the cursor or the screen; false for
// the others.
func (v *diffView) move(k rune) bool {
	page := max(1, v.body()-1)
	switch k {
	case 'j', keyDown:
		v.setCursor(v.cur + 1)
	case '\r', '\n':
		if f, line := v.under(); f != nil && line < 0 && v.collapsed(v.ix.order[v.placeOfFile(f)]) {
			v.toggle()
			break
		}
		v.setCursor(v.cur + 1)
	case 'k', keyUp:
		v.setCursor(v.cur - 1)
	case ' ', 'f' - 'a' + 1, keyPgDn: // space, ^F
		v.scroll(page)
	case 'b', 'b' - 'a' + 1, keyPgUp: // b, ^B
		v.scroll(-page)
	case 'd' - 'a' + 1: // ^D, half a page as in less
		v.scroll(page / 2)
	case 'u' - 'a' + 1:
		v.scroll(-page / 2)
	case 'g', '<', keyHome:
		v.top, v.cur = 0, 0
	case 'G', '>', keyEnd:
		v.top = v.maxTop()
		v.setCursor(v.total() - 1)
	case ']':
		v.nextFile()
	case '[':
		v.prevFile()
	case 'J':
		v.nextHunk(true)
	case 'K':
		v.nextHunk(false)
	case '}':
		v.nextFlag(true)
	case '{':
		v.nextFlag(false)
	case ')':
		v.nextComment(true)
	case '(':
		v.nextComment(false)
	case keyRight:
		v.left += v.sideStep()
	case keyLeft:
		v.left = max(0, v.left-v.sideStep())
	case '\t':
		v.otherSide()
	default:
		return false
	}
	return true
}

func (v *diffView) handleSearch(k rune) {
	switch k {
	case '\r', '\n':
		v.mode = modeDiff
		if len(v.input) > 0 {
			v.setQuery(string(v.input))
			v.search(true)
		} else {
			v.search(true) // an empty search repeats the last, as less does
		}
	case keyEsc, 'c' - 'a' + 1, 'g' - 'a' + 1:
		v.mode = modeDiff
	case 0x7f, 0x08:
		v.input = dropRune(v.input)
	case 'u' - 'a' + 1:
		v.input = v.input[:0]
	default:
		if k >= ' ' && k != 0x7f {
			v.input = utf8.AppendRune(v.input, k)
		}
	}
}

func (v *diffView) handleList(k rune) {
	n := len(v.ix.order)
	switch {
	case k >= '0' && k <= '9':
		v.input = append(v.input, byte(k))
		return
	case k == 0x7f || k == 0x08:
		v.input = dropRune(v.input)
		return
	}
	switch k {
	case 'q', 'Q', keyEsc, 'f', 'F':
		if len(v.input) > 0 && k == keyEsc {
			v.input = v.input[:0]
			return
		}
		v.mode = modeDiff
	case 'j', keyDown:
		v.sel = min(n-1, v.sel+1)
	case 'k', keyUp:
		v.sel = max(0, v.sel-1)
	case ' ', keyPgDn:
		v.sel = min(n-1, v.sel+v.body())
	case 'b', keyPgUp:
		v.sel = max(0, v.sel-v.body())
	case 'm':
		if v.sel >= 0 && v.sel < n {
			f := &v.ix.files[v.ix.order[v.sel]]
			v.ix.m.SetViewed(f.ref, !v.ix.m.Viewed(f.ref))
		}
	case 'g', keyHome:
		v.sel = 0
	case 'G', keyEnd:
		v.sel = max(0, n-1)
	case '\r', '\n':
		if len(v.input) > 0 {
			no, err := strconv.Atoi(string(v.input))
			v.input = v.input[:0]
			if err != nil || no < 1 || no > n {
				v.msg = "no file " + quoteLine(strconv.Itoa(no)) + ": the files are numbered 1 to " + strconv.Itoa(n)
				return
			}
			v.sel = no - 1
		}
		v.mode = modeDiff
		v.jump(v.sel)
	case keyNone:
	default:
		v.msg = "unknown key " + quoteLine(string(k)) + ": j/k move, Enter goes to the file, a number then Enter too, q goes back"
	}
}

func dropRune(p []byte) []byte {
	_, n := utf8.DecodeLastRune(p)
	return p[:len(p)-n]
}
