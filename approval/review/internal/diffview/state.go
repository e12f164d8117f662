package diffview

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/approval/review/model"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// diffView is the full-screen view's state: where it is in the index and
// what the reviewer asked for. It is drawn a screen at a time (frame):
// nothing in it grows with the diff but the index and one flag a file.
type diffView struct {
	ix     *diffIndex
	open   []bool // by file: a big file the reviewer opened
	starts []int  // by place in ix.order: the file's first row; the last is the rows' total
	top    int    // the first row on the screen
	cur    int    // the cursor's row: what y, x, c and the jumps act on
	mark   int    // the row a range to comment on starts at (v); -1: none
	only   int    // the commit shown alone (=); -1: every one
	left   int    // cells scrolled right, for lines wider than the screen

	cols, rows int
	color      bool

	mode  viewMode
	input []byte // the search or file number being typed
	sel   int    // the file list's chosen place in ix.order
	msg   string // one line for the status row, airlock's own words

	query string // the search, as typed (raw: sanitised when drawn)
	fold  bool   // the query has no capital: case does not matter
	lower string // the text with ASCII lowered, made on the first such search
	hitAt int    // the current match's byte offset in the text; -1: none

	shown   string      // what the header says is shown
	inputOf inputKind   // what modeInput's text is for
	pending pendingNote // the comment being typed, or the one being edited
	csel    int         // the comments list's chosen comment
	outcome Outcome     // what the reviewer decided, when they did

	buf []byte // the frame, reused

	// space is the w key's mode (whitespace ignored), and spaced the
	// review to show in a mode (space.go); words name the flags.
	space  bool
	spaced func(space bool) *model.Review
	words  Words
}

type viewMode int

const (
	modeDiff viewMode = iota
	modeList
	modeSearch
	modeHelp
	modeInput    // a comment or a reason typed in the status row
	modeComments // the list of comments, to see, edit and delete
)

func newDiffView(ix *diffIndex, cols, rows int, color bool) *diffView {
	v := &diffView{ix: ix, open: make([]bool, len(ix.files)), cols: cols, rows: rows, color: color, hitAt: -1, mark: -1, only: -1}
	v.layout()
	return v
}

// showCommit shows only the files of the next commit of the push (=),
// round to the whole push after the last.
func (v *diffView) showCommit() {
	var commits []int
	for ci, c := range v.ix.m.Commits {
		if len(c.Files) > 0 && !c.Base {
			commits = append(commits, ci)
		}
	}
	if len(commits) < 2 {
		v.msg = "this push has one commit: it is all shown"
		return
	}
	next := -1
	for _, ci := range commits {
		if ci > v.only {
			next = ci
			break
		}
	}
	v.only, v.ix.order = next, v.ix.all
	if next >= 0 {
		v.ix.order = nil
		for _, i := range v.ix.all {
			if v.ix.files[i].ref.Commit == next {
				v.ix.order = append(v.ix.order, i)
			}
		}
	}
	v.starts = nil
	v.layout()
	v.top, v.cur, v.mark, v.hitAt = 0, 0, -1, -1
}

// commitWords is the header's words for the commit shown alone.
func (v *diffView) commitWords() string {
	c := v.ix.m.Commits[v.only]
	return fmt.Sprintf("Commit %d/%d %s %s", v.only+1, len(v.ix.m.Request.Commits), shortid.HashOr(c.ID, ""), clipSubject(c.Message))
}

// clipSubject is a message's first line, sanitised and quoted, at most
// 22 characters of it: the header keeps room for the counts.
func clipSubject(msg string) string {
	s, _, _ := strings.Cut(msg, "\n")
	if r := []rune(termsafe.Line(s)); len(r) > 22 {
		return `"` + string(r[:21]) + `…"`
	}
	return quoteLine(s)
}

// layout counts each file's rows: its banner (the one line of a big
// file not opened), then its lines.
func (v *diffView) layout() {
	if v.starts == nil {
		v.starts = make([]int, len(v.ix.order)+1)
	}
	row := 0
	for k, i := range v.ix.order {
		v.starts[k] = row
		row += v.fileRows(i)
	}
	v.starts[len(v.ix.order)] = row
}

func (v *diffView) fileRows(i int) int {
	f := &v.ix.files[i]
	if f.big() && !v.open[i] {
		return 1
	}
	return 1 + f.end - f.first
}

func (v *diffView) collapsed(i int) bool { return v.ix.files[i].big() && !v.open[i] }

func (v *diffView) total() int { return v.starts[len(v.starts)-1] }

// body is the number of rows the diff has: all but the header and the
// status line.
func (v *diffView) body() int { return max(1, v.rows-2) }

// at is the file (its place in ix.order) and the row within it that row
// shows: 0 its banner, then its lines from 1; k is len(order) past the
// end.
func (v *diffView) at(row int) (k, off int) {
	k = sort.Search(len(v.ix.order), func(k int) bool { return v.starts[k+1] > row })
	if k == len(v.ix.order) {
		return k, 0
	}
	return k, row - v.starts[k]
}

// maxTop is the top that shows the last screen of the diff.
func (v *diffView) maxTop() int { return max(0, v.total()-v.body()) }

// scroll moves the screen by d rows, and the cursor with it, as less's
// pages do.
func (v *diffView) scroll(d int) {
	switch {
	case d > 0:
		v.top = min(v.top+d, max(v.maxTop(), v.top))
	case d < 0:
		v.top = max(0, v.top+d)
	}
	v.setCursor(v.cur + d)
}

// jump goes to the file at place k: its first row at the top, the cursor
// on it.
func (v *diffView) jump(k int) {
	if k >= 0 && k < len(v.ix.order) {
		v.top = v.starts[k]
		v.cur = v.top
	}
}

// nextFile and prevFile move by whole files, as ]c and [c do in an
// editor's diff.
func (v *diffView) nextFile() {
	k, _ := v.at(v.cur)
	if k+1 < len(v.ix.order) {
		v.jump(k + 1)
	} else {
		v.msg = "this is the last file"
	}
}

func (v *diffView) prevFile() {
	k, off := v.at(v.cur)
	switch {
	case k >= len(v.ix.order):
		v.jump(len(v.ix.order) - 1)
	case off > 0:
		v.jump(k)
	case k > 0:
		v.jump(k - 1)
	default:
		v.msg = "this is the first file"
	}
}

// toggle opens the big file at the top of the screen, or collapses it
// again.
func (v *diffView) toggle() {
	k, _ := v.at(v.cur)
	if k >= len(v.ix.order) {
		return
	}
	i := v.ix.order[k]
	if !v.ix.files[i].big() {
		v.msg = "this file is shown whole: only files over " + strconv.Itoa(bigFile) + " changed lines are collapsed"
		return
	}
	v.open[i] = !v.open[i]
	v.layout()
	v.jump(k)
}

func (v *diffView) resize(cols, rows int) {
	v.cols, v.rows = cols, rows
	v.top = min(v.top, max(0, v.total()-1))
	v.setCursor(v.cur)
}

// setQuery starts a search for q: without a capital letter, case does not
// matter (as less -i and vim's smartcase do).
func (v *diffView) setQuery(q string) {
	v.query, v.hitAt = q, -1
	v.fold = q == lowerASCII(q)
	if v.fold && v.lower == "" {
		v.lower = lowerASCII(v.ix.text)
	}
}

// search moves to the next (or previous) match of the query after the
// current one, or after the top of the screen, going round the end; a
// match in a collapsed file opens it, since the reviewer asked to see it.
func (v *diffView) search(forward bool) {
	if v.query == "" {
		v.msg = "no search yet: press / and type what to find"
		return
	}
	hay, q := v.ix.text, v.query
	if v.fold {
		hay = v.lower
	}
	// The search goes file by file in the order shown, from the
	// current match or the cursor.
	n := len(v.ix.order)
	if n == 0 {
		v.msg = "not found: the diff is empty"
		return
	}
	k, off := v.at(v.cur)
	var from int
	switch {
	case v.hitAt >= 0:
		from = v.hitAt
		k = v.placeOf(v.ix.lineAt(from))
	case k >= n: // past the end: from the end
		k, from = n-1, len(hay)
	default:
		f := &v.ix.files[v.ix.order[k]]
		from = v.ix.start(min(f.first+max(0, off-1), f.end))
		if forward {
			from-- // the top line itself may hold the first match
		}
	}
	for step := 0; step <= n; step++ {
		kk := k
		if forward {
			kk = (k + step) % max(1, n)
		} else {
			kk = ((k-step)%max(1, n) + n) % max(1, n)
		}
		if kk >= n {
			break
		}
		f := &v.ix.files[v.ix.order[kk]]
		lo, hi := v.ix.start(f.first), v.ix.start(f.end)
		at := -1
		switch {
		case forward && step == 0:
			if start := max(lo, from+1); start <= hi {
				if i := strings.Index(hay[start:hi], q); i >= 0 {
					at = start + i
				}
			}
		case forward:
			if i := strings.Index(hay[lo:hi], q); i >= 0 {
				at = lo + i
			}
		case step == 0:
			if end := min(hi, from+len(q)-1); end > lo {
				at = lastIndex(hay, lo, end, q)
			}
		default:
			at = lastIndex(hay, lo, hi, q)
		}
		if at >= 0 {
			if step == n {
				v.msg = "search went round: back at the first match"
			} else if forward && kk < k || !forward && kk > k {
				v.msg = "search went round the end of the diff"
			}
			v.show(kk, at)
			return
		}
	}
	v.msg = "not found: " + quoteLine(v.query)
}

func lastIndex(hay string, lo, hi int, q string) int {
	if hi-lo < len(q) {
		return -1
	}
	if i := strings.LastIndex(hay[lo:hi], q); i >= 0 {
		return lo + i
	}
	return -1
}

// show makes the match at byte at, in the file at place k, the current
// one: its file opened, its line third on the screen.
func (v *diffView) show(k, at int) {
	i := v.ix.order[k]
	if v.collapsed(i) {
		v.open[i] = true
		v.layout()
	}
	v.hitAt = at
	if v.msg == "" {
		v.msg = "found " + quoteLine(v.query) + ": n next, N previous"
	}
	line := v.ix.lineAt(at)
	row := v.starts[k] + 1 + line - v.ix.files[i].first
	v.top = max(0, min(row-2, v.maxTop()))
	v.cur = row
	v.left = 0
}

// placeOf is the place in ix.order of the file that holds line.
func (v *diffView) placeOf(line int) int {
	for k, i := range v.ix.order {
		if f := &v.ix.files[i]; line >= f.first && line < f.end {
			return k
		}
	}
	return 0
}

// lowerASCII lowers ASCII letters only, so offsets in the result are
// offsets in s.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// indexFold is strings.Index, with ASCII case ignored when fold.
func indexFold(s, q string, fold bool) int {
	if !fold {
		return strings.Index(s, q)
	}
	for i := 0; i+len(q) <= len(s); i++ {
		j := 0
		for ; j < len(q); j++ {
			c := s[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != q[j] {
				break
			}
		}
		if j == len(q) {
			return i
		}
	}
	return -1
}
