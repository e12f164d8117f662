package diffview

import (
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/approval"
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
}

// Show shows r's diff full screen until the reviewer presses q. It
// reports false, having shown nothing, where a full screen cannot be
// shown (TERM=dumb, no size, no raw mode); the caller pages the diff
// then. An error is the terminal's (a read cancelled, ^C, a write that
// failed), after the screen is restored.
func Show(t Terminal, r *approval.Request, words Words) (bool, error) {
	if !t.FullScreen() {
		return false, nil
	}
	cols, rows, ok := t.Size()
	if !ok {
		return false, nil
	}
	restore, err := t.Raw()
	if err != nil {
		return false, nil
	}
	defer restore()
	stop := t.WatchResize()
	defer stop()
	if _, err := io.WriteString(t, escEnter); err != nil {
		return true, err
	}
	defer io.WriteString(t, escLeave)
	v := newDiffView(shownIndex(r, words, false), cols, rows, t.Color())
	v.reindex = func(space bool) *diffIndex { return shownIndex(r, words, space) }
	v.hi = newRender(v.ix, colorsOf(t))
	for {
		if _, err := t.Write(v.frame()); err != nil {
			return true, err
		}
		k, err := readViewKey(t)
		switch {
		case errors.Is(err, ErrResized):
			if c, r, ok := t.Size(); ok {
				v.resize(c, r)
			}
			continue
		case err != nil:
			return true, err
		}
		if v.handle(k) {
			return true, nil
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
	case modeHelp:
		v.mode = modeDiff // any key closes the help
		return false
	}
	page := max(1, v.body()-1)
	switch k {
	case 'q', 'Q':
		// Not Esc: an arrow key's bytes split by a slow link would
		// read as Esc, and the rest of them would reach the prompt.
		return true
	case 'j', keyDown, '\r', '\n':
		if k == '\r' || k == '\n' {
			if kk, _ := v.at(v.top); kk < len(v.ix.order) && v.collapsed(v.ix.order[kk]) {
				v.toggle()
				break
			}
		}
		v.scroll(1)
	case 'k', keyUp:
		v.scroll(-1)
	case ' ', 'f' - 'a' + 1, keyPgDn: // space, ^F
		v.scroll(page)
	case 'b', 'b' - 'a' + 1, keyPgUp: // b, ^B
		v.scroll(-page)
	case 'd' - 'a' + 1: // ^D, half a page as in less
		v.scroll(page / 2)
	case 'u' - 'a' + 1:
		v.scroll(-page / 2)
	case 'g', '<', keyHome:
		v.top = 0
	case 'G', '>', keyEnd:
		v.top = v.maxTop()
	case ']':
		v.nextFile()
	case '[':
		v.prevFile()
	case keyRight:
		v.left += v.sideStep()
	case keyLeft:
		v.left = max(0, v.left-v.sideStep())
	case 'o', 'O':
		v.toggle()
	case 'w':
		v.toggleSpace()
	case 'f', 'F':
		v.mode, v.input = modeList, v.input[:0]
		v.sel, _ = v.at(v.top)
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
	case 'a', 'r', 'p', 'A', 'R', 'P':
		v.msg = "the prompt decides: q goes back to it"
	case keyNone, keyEsc:
	default:
		v.msg = "unknown key " + quoteLine(string(k)) + ": press ? for the keys"
	}
	return false
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
