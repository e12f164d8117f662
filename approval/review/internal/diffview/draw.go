package diffview

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
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
	case modeComments:
		b = v.drawComments(b)
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
	shown := v.shown
	if shown == "" {
		shown = "Whole push"
	}
	if v.only >= 0 {
		shown = v.commitWords()
	}
	if v.space {
		shown += ", whitespace ignored"
	}
	// What is shown and the order first; then what the reviewer did, as
	// far as the row holds: at 80 columns the first parts always fit.
	added, dels := 0, 0
	for _, i := range ix.order {
		added += ix.files[i].added
		dels += ix.files[i].dels
	}
	counts, byCommit := fmt.Sprintf("%s +%d -%d", plural(len(ix.order), "file"), added, dels), ""
	if r := ix.m.Request; r != nil && ix.m.Shown == model.ShownPush && v.only < 0 && !v.space && len(ix.m.Commits) > 1 {
		// The prompt and the list count the push as it lands (a file two
		// commits change is one file): the same words here, and the
		// banners' count, commit by commit, after them where they differ.
		net := fmt.Sprintf("%s +%d -%d", plural(len(r.Files), "file"), r.Added, r.Deleted)
		if net != counts {
			counts, byCommit = net, counts+" by commit"
		}
	}
	s := fmt.Sprintf(" %s: %s. %s", shown, counts, v.orderWords())
	var more []string
	if n := len(ix.m.Comments()); n > 0 {
		more = append(more, plural(n, "comment"))
	}
	if ix.m.LeftOut() {
		more = append(more, "some left out")
	}
	if n := v.viewedCount(); n > 0 {
		more = append(more, fmt.Sprintf("%d viewed", n))
	}
	if byCommit != "" {
		more = append(more, byCommit)
	}
	for _, m := range more {
		if cellWidth(s+"; "+m) > v.cols {
			break
		}
		s += "; " + m
	}
	return v.bar(rowAt(b, 1), s)
}

// orderWords says the order the files are in.
func (v *diffView) orderWords() string {
	high, medium := 0, 0
	for _, i := range v.ix.order {
		switch v.ix.files[i].sev {
		case approval.High:
			high++
		case approval.Medium:
			medium++
		}
	}
	if high+medium == 0 {
		return "No file flagged"
	}
	return fmt.Sprintf("Risk first: %d high, %d med", high, medium)
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
			b = v.drawBanner(b, k, f, v.collapsed(i), v.top+r)
			continue
		}
		if v.hi.side.on {
			b = v.drawSide(b, i, f, off-1, v.top+r)
			continue
		}
		b = v.drawLine(b, f, f.first+off-1, v.top+r)
	}
	return b
}

// drawBanner is the row that starts a file: its place in the order, its
// name and counts, and its risks, so that the reviewer sees why it comes
// where it does; a big file not opened is this row alone.
func (v *diffView) drawBanner(b []byte, k int, f *diffFile, collapsed bool, row int) []byte {
	mark := ""
	if f.sev != 0 {
		mark = strings.TrimSpace(f.marker) + " "
	}
	s := fmt.Sprintf("%s= %d/%d %s%s  +%d -%d", v.cursorMark(row), k+1, len(v.ix.order), mark, f.name, f.added, f.dels)
	if f.commit != "" {
		s += "  " + f.commit
	}
	if v.ix.m.Viewed(f.ref) {
		s += "  (viewed)"
	}
	s += v.fileState(f)
	if n := len(v.commentsOn(f, -1)); n > 0 {
		s += "  * " + plural(n, "comment")
	}
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

// drawLine draws line no of file f on row, after its gutter (gutter.go:
// the cursor, what is left out, the comments, both sides' numbers), in
// git's colours, from v.left on: a changed line's changed words
// highlighted against the line it is paired with, syntax colour where
// the terminal has colour, the matches of the search in reverse video
// (paint.go).
func (v *diffView) drawLine(b []byte, f *diffFile, no, row int) []byte {
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
	b = v.gutter(b, f, no, row)
	w := cellWriter{b: b, width: v.cols - 1 - v.gutterWidth(), skip: v.left}
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
		seen := " "
		if v.ix.m.Viewed(f.ref) {
			seen = "v"
		}
		s := fmt.Sprintf("%4d %s %s %s  +%d -%d", k+1, seen, f.marker, f.name, f.added, f.dels)
		if v.collapsed(i) {
			s += "  (collapsed)"
		}
		s += v.fileState(f)
		w := cellWriter{b: b, width: v.cols - 1}
		if k == v.sel {
			w.b = append(w.b, escReverse...)
		}
		w.put(s)
		b = v.edge(w)
	}
	return b
}

// viewHelp is the view's keys, as ? shows them (and the README). Its
// keys are git add -p's (y, J K, /), less's (moving, / n N, q) and tig's
// (] [ files); w and s are kept for the whitespace mode and side by side.
var viewHelp = []string{
	"Move   j k Up Down: line   Space b ^D ^U: page   g G: first, last",
	"       ] [: file   J K: hunk   } {: flagged file   ) (: comment",
	"       Left Right: sideways   o Enter: open a collapsed file (over " + strconv.Itoa(bigFile) + ")",
	"Find   / text Enter: search (lower case: any case)   n N: next, previous",
	"Files  f: the file list (Enter or a number goes to one)",
	"Show   =: one commit alone, the next   w: whitespace ignored (git diff -w)",
	"       s: side by side or unified (side by side from " + strconv.Itoa(sideCols) + " columns)",
	"       Tab: side by side, the cursor to the row's other side (old, new)",
	"       m: mark the file viewed, or not (kept for later reviews of it)",
	"Pick   y: accept the hunk under the cursor (on a file's first line: the file)",
	"       x: leave it out (it stays in the sandbox)",
	"       + -: accept, leave out the one changed line under the cursor",
	"Note   c: comment on the line under the cursor (a deleted line: its old",
	"          side), or on the range from v; on a file's first line, the file",
	"       v: start (or clear) a range   C: the comments: e edits, d deletes",
	"Decide a: approve (what you left out stays out: a pick)",
	"       r: reject, with a reason the worker is told",
	"       q: back to the prompt, deciding nothing",
	"Marks  > cursor  x left out  ~ partly  * commented  | range",
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
	case v.mode == modeInput:
		s = v.inputPrompt() + termsafe.Line(string(v.input)) + "_"
		if v.msg != "" {
			s = v.msg + "  " + s
		}
	case v.mode == modeList && len(v.input) > 0:
		s = "go to file " + string(v.input) + "_   (Enter: go; Backspace; Esc: cancel)"
	case v.mode == modeList:
		s = fmt.Sprintf("file %d/%d  ", v.sel+1, len(v.ix.order))
		if v.msg != "" {
			s += v.msg
		} else {
			s += "Enter go  m viewed  q back  j/k space/b g/G  or a number"
		}
	case v.mode == modeComments:
		s = v.msg
		if s == "" {
			s = "e edit  d delete  Enter go to it  j/k choose  q back"
		}
	default:
		s = v.statusLine()
	}
	if v.notice != nil {
		if n := v.notice(); n != "" {
			s = n + "  " + s
		}
	}
	b = rowAt(b, v.rows)
	w := cellWriter{b: b, width: v.cols - 1}
	w.put(s)
	return append(w.b, sgrReset...)
}

// statusLine is the diff's status row: where the cursor is, then a
// message, the comment under the cursor, or the keys, as many as fit.
func (v *diffView) statusLine() string {
	k, _ := v.at(v.cur)
	n := len(v.ix.order)
	s := fmt.Sprintf("file %d/%d line %d/%d ", min(k+1, n), n, min(v.cur+1, v.total()), v.total())
	if v.left > 0 {
		s += fmt.Sprintf("(right %d) ", v.left)
	}
	if v.msg != "" {
		return s + v.msg
	}
	if f, line := v.under(); f != nil {
		if on := v.commentsOn(f, line); len(on) > 0 {
			c := v.ix.m.Comments()[on[0]]
			return s + "* " + termsafe.Line(c.Text) + "  (C: edit, delete)"
		}
	}
	if v.mark >= 0 {
		return s + "range from the mark: c comments on it, v or Esc clears it"
	}
	for _, h := range []string{"? keys", "y/x pick", "c comment", "a approve", "r reject", "q back", "/ find", "J/K hunk"} {
		if cellWidth(s+" "+h) > v.cols-1 {
			break
		}
		s += " " + h
	}
	return s
}

// inputPrompt says what the text typed in the status row is for.
func (v *diffView) inputPrompt() string {
	switch v.inputOf {
	case inputReason:
		return "Reject. Reason (Enter: send; Esc: back): "
	case inputEdit:
		return "Edit (Enter: save; Esc: keep): "
	}
	return "Comment on " + termsafe.Line(model.Place(v.pending.c)) + " (Enter: add; Esc: drop): "
}

// drawComments lists the comments: where each points, and its text.
func (v *diffView) drawComments(b []byte) []byte {
	cs := v.ix.m.Comments()
	top := max(0, min(v.csel-v.body()/2, len(cs)-v.body()+1))
	for r := 0; r < v.body(); r++ {
		b = rowAt(b, r+2)
		w := cellWriter{b: b, width: v.cols - 1}
		switch i := top + r - 1; {
		case r == 0:
			w.put(fmt.Sprintf("Your comments (%d), sent with your decision:", len(cs)))
		case i < len(cs):
			if i == v.csel {
				w.b = append(w.b, escReverse...)
			}
			w.put(fmt.Sprintf("%3d  %s  %s", i+1, termsafe.Line(model.Place(cs[i])), termsafe.Line(cs[i].Text)))
		}
		b = v.edge(w)
	}
	return b
}

// cellWidth is how many cells s takes.
func cellWidth(s string) int {
	n := 0
	for _, r := range s {
		n += cells(r)
	}
	return n
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
