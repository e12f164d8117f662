package diffview

import (
	"strconv"

	"github.com/airlock-dev/airlock/approval/review/model"
)

// gutterWidth is the cells before a line's text: the cursor, the
// selection and the comment marks, then the old and new line numbers.
func (v *diffView) gutterWidth() int { return 3 + 2*v.ix.numWidth + 2 }

// cursorMark is the cursor's mark for row: '>' on it, '|' on a range
// being marked, else a space.
func (v *diffView) cursorMark(row int) string {
	switch {
	case row == v.cur:
		return ">"
	case v.mark >= 0 && row >= min(v.mark, v.cur) && row <= max(v.mark, v.cur):
		return "|"
	}
	return " "
}

// gutter writes line no's gutter: the cursor, 'x' for what is left out
// ('~' on the "@@" line of a hunk left out in part), '*' for a comment,
// and the line's numbers on each side (blank where the side has none).
func (v *diffView) gutter(b []byte, f *diffFile, no, row int) []byte {
	b = append(b, v.cursorMark(row)...)
	ref := v.ix.ref(no)
	sel, note := byte(' '), byte(' ')
	var old, nu int
	if ref.hunk >= 0 {
		h := v.ix.hunkRef(f, no)
		switch v.ix.m.HunkState(h) {
		case model.LeftOut:
			if ref.line < 0 {
				sel = 'x'
			}
		case model.Partly:
			if ref.line < 0 {
				sel = '~'
			}
		}
		if l, ok := v.ix.modelLine(f, no); ok {
			old, nu = l.Old, l.New
			if l.Changed >= 0 && !v.ix.m.LineAccepted(h, l.Changed) {
				sel = 'x'
			}
			if len(v.commentsOn(f, no)) > 0 {
				note = '*'
			}
		}
	}
	b = append(b, sel, note)
	b = appendNum(b, old, v.ix.numWidth)
	b = append(b, ' ')
	b = appendNum(b, nu, v.ix.numWidth)
	return append(b, ' ')
}

// appendNum writes n right-aligned in width cells; blanks for 0.
func appendNum(b []byte, n, width int) []byte {
	s := ""
	if n > 0 {
		s = strconv.Itoa(n)
	}
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// fileState says, for a banner or the file list, how much of the file is
// left out: "" when nothing is.
func (v *diffView) fileState(f *diffFile) string {
	left, all := 0, 0
	for _, h := range v.fileHunks(f) {
		all++
		switch v.ix.m.HunkState(h) {
		case model.LeftOut:
			left++
		case model.Partly:
			return "  partly left out"
		}
	}
	switch {
	case left == 0:
		return ""
	case left == all:
		return "  left out"
	}
	return "  partly left out"
}
