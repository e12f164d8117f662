package diffview

import "github.com/airlock-dev/airlock/approval/review/model"

// setCursor puts the cursor on row, within the diff, and scrolls so
// that it is on the screen.
func (v *diffView) setCursor(row int) {
	v.cur = max(0, min(row, v.total()-1))
	switch {
	case v.cur < v.top:
		v.top = v.cur
	case v.cur >= v.top+v.body():
		v.top = v.cur - v.body() + 1
	}
}

// goTo puts the cursor on row, the row third on the screen, as a search
// shows its match.
func (v *diffView) goTo(row int) {
	v.cur = row
	v.top = max(0, min(row-2, v.maxTop()))
	v.setCursor(row)
}

// under is what the cursor is on: the file (nil past the end), and the
// diff's line (-1: the file's banner).
func (v *diffView) under() (*diffFile, int) {
	return v.rowLine(v.cur)
}

// rowLine is the file and line a row shows (line -1: the banner).
func (v *diffView) rowLine(row int) (*diffFile, int) {
	k, off := v.at(row)
	if k >= len(v.ix.order) {
		return nil, -1
	}
	f := &v.ix.files[v.ix.order[k]]
	if off == 0 {
		return f, -1
	}
	return f, f.first + off - 1
}

// rowOf is the row that shows line of the file at place k, its file
// opened if it was collapsed.
func (v *diffView) rowOf(k, line int) int {
	i := v.ix.order[k]
	if v.collapsed(i) {
		v.open[i] = true
		v.layout()
	}
	return v.starts[k] + 1 + line - v.ix.files[i].first
}

// findRow moves the cursor to the next (or previous) row after it that
// is. A collapsed file is one row, its banner: is sees it so.
func (v *diffView) findRow(forward bool, is func(f *diffFile, line int) bool) bool {
	step := 1
	if !forward {
		step = -1
	}
	for row := v.cur + step; row >= 0 && row < v.total(); row += step {
		if f, line := v.rowLine(row); f != nil && is(f, line) {
			v.goTo(row)
			return true
		}
	}
	return false
}

// isHunkStart: a hunk's "@@" line, or the banner of a file whose hunks
// are not on the screen (collapsed, or none: a binary).
func (v *diffView) isHunkStart(f *diffFile, line int) bool {
	if line < 0 {
		i := v.ix.order[v.placeOfFile(f)]
		return v.collapsed(i) || f.hunks < 0
	}
	return v.ix.ref(line).hunk >= 0 && v.ix.ref(line).line < 0
}

func (v *diffView) placeOfFile(f *diffFile) int {
	for k, i := range v.ix.order {
		if &v.ix.files[i] == f {
			return k
		}
	}
	return 0
}

// nextHunk and the others move the cursor as J K (git add -p's), } {
// (the flagged files) and ) ( (the comments) do.
func (v *diffView) nextHunk(forward bool) {
	if !v.findRow(forward, v.isHunkStart) {
		v.msg = map[bool]string{true: "this is the last hunk", false: "this is the first hunk"}[forward]
	}
}

func (v *diffView) nextFlag(forward bool) {
	if !v.findRow(forward, func(f *diffFile, line int) bool { return line < 0 && f.sev != 0 }) {
		v.msg = map[bool]string{true: "no flagged file after this one", false: "no flagged file before this one"}[forward]
	}
}

func (v *diffView) nextComment(forward bool) {
	if len(v.ix.m.Comments()) == 0 {
		v.msg = "no comments yet: c comments on the line under the cursor"
		return
	}
	if !v.findRow(forward, func(f *diffFile, line int) bool { return len(v.commentsOn(f, line)) > 0 }) {
		v.msg = map[bool]string{true: "no comment after this line", false: "no comment before this line"}[forward]
	}
}

// commentsOn are the places of the comments on line of f (line -1, the
// banner: those on the file as a whole).
func (v *diffView) commentsOn(f *diffFile, line int) []int {
	var out []int
	cs := v.ix.m.Comments()
	if line < 0 {
		for i, c := range cs {
			if c.Path == f.path && c.Line == 0 {
				out = append(out, i)
			}
		}
		return out
	}
	l, ok := v.ix.modelLine(f, line)
	if !ok {
		return nil
	}
	for i, c := range cs {
		if v.ix.m.Covers(c, f.ref, l) {
			out = append(out, i)
		}
	}
	return out
}

// rowOfComment is the row of comment i's first line (its file's banner
// for a file's), -1 when the diff does not show it.
func (v *diffView) rowOfComment(i int) int {
	c := v.ix.m.Comments()[i]
	for k, fi := range v.ix.order {
		f := &v.ix.files[fi]
		if f.path != c.Path {
			continue
		}
		if c.Line == 0 {
			return v.starts[k]
		}
		for line := f.first; line < f.end; line++ {
			if l, ok := v.ix.modelLine(f, line); ok && v.ix.m.Covers(c, f.ref, l) {
				return v.rowOf(k, line)
			}
		}
	}
	return -1
}

// fileHunks are the refs of f's hunks, or the file itself (Hunk -1) when
// it has none.
func (v *diffView) fileHunks(f *diffFile) []model.Ref {
	mf := v.ix.m.File(f.ref)
	if len(mf.Hunks) == 0 {
		return []model.Ref{{Commit: f.ref.Commit, File: f.ref.File, Hunk: -1}}
	}
	out := make([]model.Ref, len(mf.Hunks))
	for i := range mf.Hunks {
		out[i] = model.Ref{Commit: f.ref.Commit, File: f.ref.File, Hunk: i}
	}
	return out
}
