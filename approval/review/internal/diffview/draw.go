package diffview

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// The view's own escape sequences: plain VT100/xterm ones, so that it
// works over any SSH session. The text between them is the diff's,
// sanitised by termsafe as it is drawn.
const (
	escEnter   = "\x1b[?1049h\x1b[?25l" // the alternate screen; the cursor hidden
	escLeave   = "\x1b[?25h\x1b[?1049l" // back to the screen the prompt was on
	escReverse = "\x1b[7m"
	escNoRev   = "\x1b[27m"

	// git's colours for a diff, as the prompt's pager path has them.
	sgrReset  = "\x1b[m"
	sgrBold   = "\x1b[1m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
	sgrCyan   = "\x1b[36m"
)

// frame is the whole screen, drawn row by row from the index: it reads
// only the lines on the screen, whatever the diff's size. The buffer is
// reused from frame to frame.
func (v *diffView) frame() []byte {
	b := v.buf[:0]
	if v.rows < 3 || v.cols < 20 {
		b = rowAt(b, 1)
		b = append(b, "terminal too small: q goes back"...)
		v.buf = b
		return b
	}
	if v.hi == nil {
		v.hi = newRender(v.ix, colorsOfBool(v.color))
	}
	v.bind()
	v.syncLayout()
	b = v.drawHeader(b)
	switch v.mode {
	case modeList:
		b = v.drawList(b)
	case modeHelp:
		b = v.drawHelp(b)
	default:
		b = v.drawBody(b)
	}
	b = v.drawStatus(b)
	v.buf = b
	return b
}

// rowAt moves to the start of row (from 1) and clears it. The row is
// cleared before it is written: erasing after text that filled the last
// column would erase that column on xterm.
func rowAt(b []byte, row int) []byte {
	b = append(b, "\x1b["...)
	b = strconv.AppendInt(b, int64(row), 10)
	return append(b, ";1H\x1b[2K"...)
}

func (v *diffView) drawHeader(b []byte) []byte {
	ix := v.ix
	var s string
	if v.mode == modeList {
		s = fmt.Sprintf(" Files: %d. %s", len(ix.files), v.orderWords())
	} else {
		s = fmt.Sprintf(" Diff: %d files, +%d -%d. %s", len(ix.files), ix.added, ix.dels, v.orderWords())
	}
	return v.bar(rowAt(b, 1), s)
}

// orderWords says the order the files are in.
func (v *diffView) orderWords() string {
	ix := v.ix
	if ix.high+ix.medium == 0 {
		return "Order: the diff's (no file is flagged)"
	}
	return fmt.Sprintf("Order: risk first (%d high, %d medium), then the rest", ix.high, ix.medium)
}

// bar writes s in reverse video across the whole row.
func (v *diffView) bar(b []byte, s string) []byte {
	b = append(b, escReverse...)
	w := cellWriter{b: b, width: v.cols}
	w.put(s)
	for w.col < v.cols {
		w.b = append(w.b, ' ')
		w.col++
	}
	return append(w.b, sgrReset...)
}

func (v *diffView) drawBody(b []byte) []byte {
	n := len(v.ix.order)
	for r := 0; r < v.body(); r++ {
		b = rowAt(b, r+2)
		k, off := v.at(v.top + r)
		if k >= n {
			b = append(b, '~')
			continue
		}
		i := v.ix.order[k]
		f := &v.ix.files[i]
		if off == 0 {
			b = v.drawBanner(b, k, f, v.collapsed(i))
			continue
		}
		if v.hi.side.on {
			b = v.drawSide(b, i, f, off-1)
			continue
		}
		b = v.drawLine(b, f, f.first+off-1)
	}
	return b
}

// drawBanner is the row that starts a file: its place in the order, its
// name and counts, and its risks, so that the reviewer sees why it comes
// where it does; a big file not opened is this row alone.
func (v *diffView) drawBanner(b []byte, k int, f *diffFile, collapsed bool) []byte {
	mark := ""
	if f.sev != 0 {
		mark = strings.TrimSpace(f.marker) + " "
	}
	s := fmt.Sprintf("== %d/%d %s%s  +%d -%d", k+1, len(v.ix.order), mark, f.name, f.added, f.dels)
	if f.labels != "" {
		s += "  " + f.labels
	}
	if collapsed {
		s += fmt.Sprintf("  %d changed lines, collapsed: o or Enter opens it", f.changed())
	}
	w := cellWriter{b: b, width: v.cols - 1}
	switch {
	case v.color && f.sev == approval.High:
		w.b = append(w.b, sgrBold+sgrRed...)
	case v.color && f.sev == approval.Medium:
		w.b = append(w.b, sgrBold+sgrYellow...)
	default:
		w.b = append(w.b, sgrBold...)
	}
	w.put(s)
	return v.edge(w)
}

// drawLine draws line no of file f, in git's colours, from v.left on:
// a changed line's changed words highlighted against the line it is
// paired with, syntax colour where the terminal has colour, the matches
// of the search in reverse video (paint.go).
func (v *diffView) drawLine(b []byte, f *diffFile, no int) []byte {
	s := v.ix.line(no)
	// Only what can be on the screen is read: an escaped byte takes at
	// least a cell, so 4 bytes a cell is more than enough, whatever
	// the line's length.
	if lim := 4*(v.cols+v.left) + 8; len(s) > lim {
		for lim > 0 && !utf8.RuneStart(s[lim]) {
			lim--
		}
		s = s[:lim]
	}
	w := cellWriter{b: b, width: v.cols - 1, skip: v.left}
	kind := kindOf(f, no, s)
	hidden := v.paint(&w, kind, s, v.lineStyles(f, no, kind, s), true)
	return v.edgeOf(w, kind, hidden)
}

// edge ends a row: a '>' in the last column says the line goes on past
// the screen (arrows scroll sideways).
func (v *diffView) edge(w cellWriter) []byte {
	w.b = append(w.b, sgrReset...)
	if w.full {
		w.b = append(w.b, "\x1b["...)
		w.b = strconv.AppendInt(w.b, int64(v.cols), 10)
		w.b = append(w.b, "G"+escReverse+">"+sgrReset...)
	}
	return w.b
}

func (v *diffView) drawList(b []byte) []byte {
	n := len(v.ix.order)
	top := max(0, min(v.sel-v.body()/2, n-v.body()))
	for r := 0; r < v.body(); r++ {
		b = rowAt(b, r+2)
		k := top + r
		if k >= n {
			continue
		}
		i := v.ix.order[k]
		f := &v.ix.files[i]
		s := fmt.Sprintf("%4d  %s %s  +%d -%d", k+1, f.marker, f.name, f.added, f.dels)
		if v.collapsed(i) {
			s += "  (collapsed)"
		}
		w := cellWriter{b: b, width: v.cols - 1}
		if k == v.sel {
			w.b = append(w.b, escReverse...)
		}
		w.put(s)
		b = v.edge(w)
	}
	return b
}

// viewHelp is the view's keys, as ? shows them (and the README).
var viewHelp = []string{
	"Keys of the full-screen diff:",
	"  j k, Down Up        a line down, up",
	"  Space b, PgDn PgUp  a page down, up; ^D ^U half a page",
	"  g G, Home End       the first line, the last",
	"  ] [                 the next file, the previous (risk first)",
	"  Left Right          sideways, for lines wider than the screen (> at the edge)",
	"  Enter, o            open a file collapsed for its size (over " + strconv.Itoa(bigFile) + " changed",
	"                      lines); o again collapses it",
	"  f                   the file list: j k and Enter, or its number and Enter",
	"  s                   side by side (old left, new right) or unified; side by",
	"                      side from " + strconv.Itoa(sideCols) + " columns unless s says otherwise",
	"  / text Enter        search (all lower case: any case); n N next, previous",
	"  w                   ignore whitespace, or show it again",
	"  q                   back to the prompt, to decide",
	"",
	"Any key closes this help.",
}

func (v *diffView) drawHelp(b []byte) []byte {
	for r := 0; r < v.body(); r++ {
		b = rowAt(b, r+2)
		if r < len(viewHelp) {
			w := cellWriter{b: b, width: v.cols - 1}
			w.put(viewHelp[r])
			b = v.edge(w)
		}
	}
	return b
}

func (v *diffView) drawStatus(b []byte) []byte {
	var s string
	switch {
	case v.mode == modeHelp:
		s = "any key: back to the diff"
	case v.mode == modeSearch:
		s = "/" + termsafe.Line(string(v.input)) + "_   (Enter: find; Esc: cancel)"
	case v.mode == modeList && len(v.input) > 0:
		s = "go to file " + string(v.input) + "_   (Enter: go; Backspace; Esc: cancel)"
	case v.mode == modeList:
		s = fmt.Sprintf("file %d/%d  ", v.sel+1, len(v.ix.order))
		if v.msg != "" {
			s += v.msg
		} else {
			s += "q back  Enter go to it  or a number, Enter  j/k space/b g/G move"
		}
	default:
		k, _ := v.at(v.top)
		n := len(v.ix.order)
		s = fmt.Sprintf("file %d/%d line %d/%d  ", min(k+1, n), n, min(v.top+1, v.total()), v.total())
		if v.left > 0 {
			s += fmt.Sprintf("(right %d)  ", v.left)
		}
		if v.msg != "" {
			s += v.msg
		} else {
			s += "q back  ? keys  f files  ]/[ file  / n N find  o open  j/k space/b g/G"
		}
	}
	b = rowAt(b, v.rows)
	w := cellWriter{b: b, width: v.cols - 1}
	w.put(s)
	return append(w.b, sgrReset...)
}

// quoteLine is s quoted and sanitised, for a message.
func quoteLine(s string) string { return `"` + termsafe.Line(s) + `"` }

// cellWriter writes sanitised text into a row of width cells, the first
// skip cells left out (the view scrolled right), and says whether the
// text went past the row (full).
type cellWriter struct {
	b           []byte
	col, width  int
	skip, shown int // cells skipped so far, of skip
	full        bool
}

// put writes s, sanitised: termsafe writes every control character,
// escape and invisible character visibly, and a tab becomes spaces.
func (w *cellWriter) put(s string) {
	if w.full {
		return
	}
	s = termsafe.Text(s)
	for _, r := range s {
		n := cells(r)
		if r == '\t' {
			n = 8 - (w.col+w.shown)%8
		}
		if w.shown < w.skip {
			// Left of the screen; a wide character cut by its edge
			// leaves blanks.
			w.shown += n
			if over := w.shown - w.skip; over > 0 {
				w.shown = w.skip
				w.spaces(over)
			}
			continue
		}
		if w.col+n > w.width {
			w.full = true
			return
		}
		if r == '\t' {
			w.spaces(n)
			continue
		}
		w.b = utf8.AppendRune(w.b, r)
		w.col += n
	}
}

func (w *cellWriter) spaces(n int) {
	for ; n > 0 && w.col < w.width; n-- {
		w.b = append(w.b, ' ')
		w.col++
	}
}

// cells is how many terminal cells r takes: none for a combining mark,
// two for a wide character.
func cells(r rune) int {
	switch {
	case r < 0x300:
		return 1
	case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
