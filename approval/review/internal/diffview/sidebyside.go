package diffview

import (
	"strconv"
	"unicode/utf8"
)

// sideCols is the width from which the diff is shown side by side unless
// the reviewer says otherwise (s): at 160 columns each side has about 72
// cells of text after its line number, as much as most code is written
// to (gofmt'd Go, PEP 8's 79, the kernel's 80) so that a side cuts few
// lines; narrower, unified cuts fewer. minSideCols is the narrowest s
// accepts.
const (
	sideCols    = 160
	minSideCols = 60
)

// sideRow is a row of the side-by-side layout: the line of the diff on
// the left (old) and on the right (new), -1 for none. A context line is
// on both; a header or "@@" line, l == r, is drawn across the row.
type sideRow struct{ l, r int32 }

type sideState struct {
	want       int8              // what s asked for: 0 as the width says, 1 side by side, -1 unified
	on         bool              // what the layout is
	counts     []int32           // by file: its rows side by side; -1 not counted yet
	rows       map[int][]sideRow // by file (its first line), for the files drawn
	dels, adds []int             // sideWalk's, reused
}

func newSideState(ix *diffIndex) sideState {
	c := make([]int32, len(ix.files))
	for i := range c {
		c[i] = -1
	}
	return sideState{counts: c, rows: map[int][]sideRow{}}
}

// sideBySide is whether the diff should be drawn side by side now.
func (v *diffView) sideBySide() bool {
	if v.hi == nil || v.cols < minSideCols {
		return false
	}
	switch v.hi.side.want {
	case 1:
		return true
	case -1:
		return false
	}
	return v.cols >= sideCols
}

// toggleSide is the s key: side by side, or unified, whatever the width.
func (v *diffView) toggleSide() {
	if v.cols < minSideCols {
		v.msg = "too narrow for side by side: it needs " + strconv.Itoa(minSideCols) + " columns"
		return
	}
	if v.sideBySide() {
		v.hi.side.want = -1
		v.msg = "unified: s shows old and new side by side"
	} else {
		v.hi.side.want = 1
		v.msg = "side by side: s shows them unified"
	}
}

// syncLayout lays the rows out again when side by side was turned on or
// off (s, or the terminal resized across sideCols), keeping the line at
// the top of the screen there.
func (v *diffView) syncLayout() {
	want := v.sideBySide()
	if want == v.hi.side.on {
		return
	}
	// The cursor and a range's mark stay on their lines, the cursor
	// on the screen; the top stays on its line where it can.
	top, cur, mark := v.rowAnchor(v.top), v.rowAnchor(v.cur), v.rowAnchor(v.mark)
	v.hi.side.on = want
	v.layout()
	v.top = min(v.anchorRow(top), v.maxTop())
	if v.mark >= 0 {
		v.mark = v.anchorRow(mark)
	}
	v.setCursor(v.anchorRow(cur))
	if !want {
		v.right = false
	}
}

// anchor is what a row shows, kept across a change of layout: the file
// at place k, and its line (-1: its banner).
type anchor struct{ k, line int }

func (v *diffView) rowAnchor(row int) anchor {
	row = max(0, row)
	k, off := v.at(row)
	if k >= len(v.ix.order) || off == 0 {
		return anchor{k, -1}
	}
	_, line := v.sideLine(row)
	return anchor{k, line}
}

func (v *diffView) anchorRow(a anchor) int {
	switch {
	case a.k >= len(v.ix.order):
		return v.total()
	case a.line < 0:
		return v.starts[a.k]
	}
	i := v.ix.order[a.k]
	v.right = v.onRight(i, a.line)
	return v.starts[a.k] + 1 + v.lineOff(i, a.line)
}

// sideRowCount is file i's rows (less its banner) side by side; false
// when the layout is unified.
func (v *diffView) sideRowCount(i int) (int, bool) {
	v.bind()
	if v.hi == nil || !v.hi.side.on {
		return 0, false
	}
	s := &v.hi.side
	if s.counts[i] < 0 {
		f := &v.ix.files[i]
		n := int32(f.end - f.first)
		if f.added > 0 && f.dels > 0 {
			// Only a file with lines both removed and added has rows
			// of two lines; a new or deleted file, a line a row.
			n = 0
			v.sideWalk(f, func(sideRow) { n++ })
		}
		s.counts[i] = n
	}
	return int(s.counts[i]), true
}

func (v *diffView) sideRows(i int) []sideRow {
	f := &v.ix.files[i]
	rows, ok := v.hi.side.rows[f.first]
	if !ok {
		v.sideWalk(f, func(r sideRow) { rows = append(rows, r) })
		v.hi.side.rows[f.first] = rows
	}
	return rows
}

// offLine is the line of the diff that row (of file i, from 0 after its
// banner) shows, its left one where it has one.
func (v *diffView) offLine(i, row int) int {
	v.bind()
	f := &v.ix.files[i]
	if v.hi == nil || !v.hi.side.on {
		return f.first + row
	}
	rows := v.sideRows(i)
	if row >= len(rows) {
		return f.end - 1
	}
	if r := rows[row]; r.l >= 0 {
		return int(r.l)
	} else {
		return int(r.r)
	}
}

// lineOff is the row (of file i, from 0 after its banner) that shows
// line of the diff.
func (v *diffView) lineOff(i, line int) int {
	v.bind()
	f := &v.ix.files[i]
	if v.hi == nil || !v.hi.side.on {
		return line - f.first
	}
	for n, r := range v.sideRows(i) {
		if int(r.l) == line || int(r.r) == line {
			return n
		}
	}
	return 0
}

// onRight: side by side, line of file i is the right one of a row that
// shows another on its left (an added line beside a removed one).
func (v *diffView) onRight(i, line int) bool {
	if v.hi == nil || !v.hi.side.on {
		return false
	}
	rows := v.sideRows(i)
	n := v.lineOff(i, line)
	if n >= len(rows) {
		return false
	}
	r := rows[n]
	return int(r.r) == line && r.l >= 0 && r.l != r.r
}

// sideWalk gives file f's rows side by side, in order: its header and
// each "@@" across, context on both sides, and each block of removed
// lines beside the added ones that follow it, paired as the word
// highlight pairs them (pairLines), the lines left unpaired beside each
// other in order.
func (v *diffView) sideWalk(f *diffFile, emit func(sideRow)) {
	dels, adds := v.hi.side.dels[:0], v.hi.side.adds[:0]
	defer func() { v.hi.side.dels, v.hi.side.adds = dels, adds }()
	flush := func() {
		i, j := 0, 0
		zip := func(di, aj int) {
			for i < di || j < aj {
				r := sideRow{-1, -1}
				if i < di {
					r.l, i = int32(dels[i]), i+1
				}
				if j < aj {
					r.r, j = int32(adds[j]), j+1
				}
				emit(r)
			}
		}
		pairLines(v.ix, dels, adds, func(d, a int) {
			zip(d-dels[0], a-adds[0])
			emit(sideRow{int32(d), int32(a)})
			i, j = i+1, j+1
		})
		zip(len(dels), len(adds))
		dels, adds = dels[:0], adds[:0]
	}
	for no := f.first; no < f.end; no++ {
		s := v.ix.line(no)
		switch kindOf(f, no, s) {
		case kindDel:
			if len(adds) > 0 {
				flush()
			}
			dels = append(dels, no)
		case kindAdd:
			adds = append(adds, no)
		default:
			flush()
			emit(sideRow{int32(no), int32(no)})
		}
	}
	flush()
}

// drawSide draws row off (of file f, number i, from 0 after its banner),
// screen row row, side by side: the old line on the left, the new on the
// right, a bar between them, each after its marks (gutter.go) and its
// number; the cursor's mark on the side it acts on (under). A header or
// "@@" line is drawn across the row, as unified.
func (v *diffView) drawSide(b []byte, i int, f *diffFile, off, row int) []byte {
	rows := v.sideRows(i)
	if off >= len(rows) {
		return b
	}
	r := rows[off]
	if r.l == r.r && kindOf(f, int(r.l), v.ix.line(int(r.l))) != kindContext {
		return v.drawLine(b, f, int(r.l), row)
	}
	// The cursor's (or the range's) mark goes on the side it acts on:
	// the left, but for a row's added line the cursor is on (Tab) or a
	// row with no old line.
	lm, rm := v.cursorMark(row), " "
	if r.l != r.r {
		cl := int(r.l)
		if row == v.cur {
			_, cl = v.under()
		} else if r.l < 0 {
			cl = int(r.r)
		}
		if cl == int(r.r) {
			lm, rm = " ", lm
		}
	}
	half := (v.cols - 2) / 2
	b = v.drawHalf(b, f, int(r.l), sideOld, 1, half, lm)
	b = column(b, half+1)
	b = append(b, "\u2502"...)
	b = column(b, half+2)
	return v.drawHalf(b, f, int(r.r), sideNew, half+2, half, rm)
}

// column moves the cursor to column col (from 1) of its row.
func column(b []byte, col int) []byte {
	b = append(b, "\x1b["...)
	b = strconv.AppendInt(b, int64(col), 10)
	return append(b, 'G')
}

// drawHalf draws line no (none: -1) in the half of the row width cells
// wide from column col: mark (the cursor's), what is left out and
// commented (gutter.go), its number on side (the model's), then its text
// scrolled as the view is; a '>' at the half's edge when the text goes
// on.
func (v *diffView) drawHalf(b []byte, f *diffFile, no, side, col, width int, mark string) []byte {
	b = append(b, sgrReset...)
	if no < 0 {
		return append(b, mark...)
	}
	s := v.ix.line(no)
	if lim := 4*(width+v.left) + 8; len(s) > lim {
		for lim > 0 && !utf8.RuneStart(s[lim]) {
			lim--
		}
		s = s[:lim]
	}
	sel, note, l := v.lineMarks(f, no)
	n := l.New
	if side == sideOld {
		n = l.Old
	}
	b = append(b, mark...)
	b = append(b, sel, note)
	b = appendNum(b, n, v.ix.numWidth)
	b = append(b, ' ')
	nw := 3 + v.ix.numWidth + 1
	kind := kindOf(f, no, s)
	w := cellWriter{b: b, width: max(1, width-nw), skip: v.left}
	// The marker is never scrolled away: it says which line this is.
	hidden := false
	if len(s) > 0 {
		st := v.lineStyles(f, no, kind, s)
		ws := cellWriter{b: w.b, width: 1}
		v.paint(&ws, kind, s[:1], st[:1], false)
		w.b = ws.b
		w.width--
		hidden = v.paint(&w, kind, s[1:], st[1:], true)
	}
	w.b = append(w.b, sgrReset...)
	if w.full {
		w.b = column(w.b, col+width-1)
		if hidden {
			w.b = v.hi.sgr(w.b, kind, stWord)
		} else {
			w.b = append(w.b, escReverse...)
		}
		w.b = append(w.b, ">"+sgrReset...)
	}
	return w.b
}

// sideStep is how far the arrow keys scroll sideways: half the width a
// line has, the screen's or, side by side, a half's.
func (v *diffView) sideStep() int {
	if v.hi != nil && v.hi.side.on {
		return max(8, (v.cols-2)/4)
	}
	return max(8, v.cols/2)
}
