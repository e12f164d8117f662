package diffview

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// bigFile is the number of changed lines past which a file is shown
// collapsed until the reviewer opens it: review research finds defects
// caught up to about 400 lines a sitting, and GitHub stops loading a file
// there too.
const bigFile = 400

// diffIndex is a review's diff as the full-screen view reads it: the
// text of its files, the offset of every line, each file's range of
// lines, and what each line is in the model (its hunk and its place
// there). It is built in one pass and holds no copy of a diff the model
// read from one, so a view of a 20,000-line push costs its lines'
// offsets and refs.
type diffIndex struct {
	m    *model.Review
	text string
	// lines[i] is where line i starts, lines[len-1] len(text): 4 bytes a
	// line (a request's diff is capped far below 4 GiB).
	lines []uint32
	// marks say what each line is in the model (ref): a mark at each
	// file's first line (its header) and at each hunk's "@@" line, in
	// order, so they cost a word or two a hunk, not a line.
	marks []hunkMark
	files []diffFile
	// order is the order files are shown in: the model's (high risk
	// first, then medium, then the rest).
	order    []int
	all      []int // the order of every file, when order shows one commit's
	numWidth int   // the digits of the largest line number
}

// lineRef is what a line of the text is: a line of its file's header
// (hunk -1), a hunk's "@@" line (line -1), or a hunk's line.
type lineRef struct{ hunk, line int32 }

// hunkMark is where a file's header (hunk -1) or one of its hunks starts.
type hunkMark struct {
	line int
	hunk int32
}

// ref is what line i is in the model.
func (ix *diffIndex) ref(i int) lineRef {
	k := sort.Search(len(ix.marks), func(k int) bool { return ix.marks[k].line > i }) - 1
	if k < 0 {
		return lineRef{-1, 0}
	}
	mk := ix.marks[k]
	if mk.hunk < 0 {
		return lineRef{-1, int32(i - mk.line)}
	}
	return lineRef{mk.hunk, int32(i - mk.line - 1)}
}

// diffFile is one file of the review.
type diffFile struct {
	ref         model.FileRef
	path        string // the worker's, as it is: sanitise before showing
	first, end  int    // its lines, [first, end)
	hunks       int    // its first hunk's line ("@@"): before it, the header; -1: none
	from        string // a rename's or copy's old path (sanitise before showing)
	added, dels int
	sev         approval.Severity
	// marker, name and labels (its flags, by name) are for the banner
	// and the list, sanitised once; commit says which commit it is of,
	// in a push of several.
	marker, name, labels, commit string
}

func (f *diffFile) changed() int { return f.added + f.dels }
func (f *diffFile) big() bool    { return f.changed() > bigFile }

// newDiffIndex indexes m's files; they are shown in m's order. The text
// is m's diff as it is, where m was read from one (no copy), else its
// commits' files one after the other.
func newDiffIndex(m *model.Review, words Words) *diffIndex {
	ix := &diffIndex{m: m, numWidth: 3, text: m.Diff}
	// refs are the files in the text's order; base[ci] is the place of
	// commit ci's first file among them.
	var refs []model.FileRef
	base := make([]int, len(m.Commits))
	for ci, c := range m.Commits {
		base[ci] = len(refs)
		for fi := range c.Files {
			refs = append(refs, model.FileRef{Commit: ci, File: fi})
		}
	}
	spans := make([][2]int, len(refs))
	if m.Diff == "" {
		var text strings.Builder
		for i, fr := range refs {
			mf := m.File(fr)
			spans[i][0] = text.Len()
			writeLines(&text, mf.Header)
			for _, h := range mf.Hunks {
				writeLines(&text, h.Text)
			}
			spans[i][1] = text.Len()
		}
		ix.text = text.String()
	} else {
		for i, fr := range refs {
			spans[i] = m.File(fr).Span
		}
	}
	n := strings.Count(ix.text, "\n") + 2
	ix.lines = make([]uint32, 0, n)
	commits := 0
	for _, c := range m.Commits {
		if len(c.Files) > 0 && !c.Base {
			commits++
		}
	}
	ix.files = make([]diffFile, 0, len(refs))
	for i, fr := range refs {
		f := diffFile{ref: fr, path: m.File(fr).Path, from: m.File(fr).From, hunks: -1}
		switch c := m.Commits[fr.Commit]; {
		case c.Base:
			f.commit = "lands as the base has it"
		case commits > 1:
			f.commit = fmt.Sprintf("commit %d/%d %s", fr.Commit+1, commits, shortid.HashOr(c.ID, ""))
		}
		ix.scan(&f, spans[i])
		ix.files = append(ix.files, f)
	}
	ix.lines = append(ix.lines, uint32(len(ix.text)))
	ix.order = make([]int, 0, len(refs))
	for _, fr := range m.Order() {
		ix.order = append(ix.order, base[fr.Commit]+fr.File)
	}
	ix.all = ix.order
	ix.rank(m, words)
	return ix
}

// writeLines writes s, ending its last line if it did not.
func writeLines(b *strings.Builder, s string) {
	b.WriteString(s)
	if s != "" && !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// scan indexes the lines of f's section of the text: their offsets, what
// each is in the model, and f's counts, as model.Hunk.Lines reads them.
func (ix *diffIndex) scan(f *diffFile, span [2]int) {
	f.first = len(ix.lines)
	ix.marks = append(ix.marks, hunkMark{f.first, -1})
	hunk := int32(-1)
	old, nu := 0, 0
	for at := span[0]; at < span[1]; {
		end := strings.IndexByte(ix.text[at:span[1]], '\n')
		if end < 0 {
			end = span[1]
		} else {
			end += at
		}
		s := ix.text[at:end]
		ix.lines = append(ix.lines, uint32(at))
		switch {
		case (hunk >= 0 || f.hunks < 0) && strings.HasPrefix(s, "@@ -"):
			if f.hunks < 0 {
				f.hunks = len(ix.lines) - 1
			}
			hunk++
			ix.marks = append(ix.marks, hunkMark{len(ix.lines) - 1, hunk})
			old, nu = model.HunkStart(s)
		case hunk >= 0 && strings.HasPrefix(s, "+"):
			f.added++
			nu++
		case hunk >= 0 && strings.HasPrefix(s, "-"):
			f.dels++
			old++
		case hunk >= 0 && !strings.HasPrefix(s, "\\"):
			old++
			nu++
		}
		at = end + 1
	}
	f.end = len(ix.lines)
	ix.numWidth = max(ix.numWidth, len(strconv.Itoa(max(old, nu))))
}

// line is line i's text, without its newline.
func (ix *diffIndex) line(i int) string {
	s := ix.text[ix.start(i):ix.start(i+1)]
	return strings.TrimSuffix(s, "\n")
}

// lineAt is the line that holds byte offset off.
func (ix *diffIndex) lineAt(off int) int {
	return sort.Search(len(ix.lines)-1, func(i int) bool { return ix.start(i+1) > off })
}

// start is where line i starts in the text.
func (ix *diffIndex) start(i int) int { return int(ix.lines[i]) }

// hunkRef is the model's name of the hunk line i is in (Hunk -1 for a
// file's header).
func (ix *diffIndex) hunkRef(f *diffFile, i int) model.Ref {
	return model.Ref{Commit: f.ref.Commit, File: f.ref.File, Hunk: int(ix.ref(i).hunk)}
}

// modelLine is line i as the model has it; ok false for a header or an
// "@@" line.
func (ix *diffIndex) modelLine(f *diffFile, i int) (model.Line, bool) {
	ref := ix.ref(i)
	if ref.hunk < 0 || ref.line < 0 {
		return model.Line{}, false
	}
	return ix.m.Hunk(ix.hunkRef(f, i)).Lines()[ref.line], true
}

// rank sets each file's severity and words from the model's flags (the
// model's order is risk first).
func (ix *diffIndex) rank(m *model.Review, words Words) {
	for i := range ix.files {
		f := &ix.files[i]
		var labels []string
		for _, fl := range m.Flags(f.ref) {
			f.sev = max(f.sev, fl.Severity)
			if l := words.Label(fl); !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
		f.marker = "  "
		if f.sev != 0 {
			f.marker = words.Marker(f.sev)
		}
		f.name = termsafe.Line(f.path)
		if f.from != "" {
			f.name += " <- " + termsafe.Line(f.from)
		}
		if len(labels) > 0 {
			f.labels = "! " + termsafe.Line(strings.Join(labels, ", "))
		}
	}
}
