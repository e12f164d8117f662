package diffview

import (
	"strconv"
	"strings"
	"time"
)

// hunk is what drawing a hunk's lines needs beyond their text, worked out
// once, when a line of the hunk is first drawn, and kept (see hiCache):
// each line's numbers on both sides, the removed and added lines paired
// as git's diff-highlight pairs them, the changed words of a pair, and the
// syntax colour of each side (syntax.go).
type hunk struct {
	at, end            int // its lines: at is the "@@" line, [at+1, end) its body
	oldStart, newStart int
	// By line of the body (line-at-1): the line's number on each side,
	// 0 where it has none (an added line has no old number). They place
	// a line in its side's lexed text (syntax.go); the numbers drawn are
	// the model's (gutter.go), which agree (TestHunkNumbersAndPairs).
	oldNo, newNo []int32
	// partner is the line (of the diff) the line is paired with, -1:
	// none. Only a removed line and an added one are paired.
	partner []int32
	words   map[int][]span // by line of the diff: its changed words, when first drawn
	syn     [2]sideSyntax  // the old side's colours and the new side's
}

// span is a range of bytes of a line's content (its text after the
// "+", "-" or " " git puts first) and what to draw it with.
type span struct {
	from, to int32
	fg       uint8 // a syntax class (syntax.go); 0 in a word span
}

const (
	sideOld = 0
	sideNew = 1
)

// newHunk reads the hunk whose "@@" line is at, up to end.
func newHunk(ix *diffIndex, at, end int) *hunk {
	h := &hunk{at: at, end: end, words: map[int][]span{}}
	h.oldStart, h.newStart = hunkStarts(ix.line(at))
	n := end - at - 1
	h.oldNo, h.newNo, h.partner = make([]int32, n), make([]int32, n), make([]int32, n)
	o, nw := int32(h.oldStart), int32(h.newStart)
	var dels, adds []int // the current block of removed lines, then added ones
	flush := func() {
		pairLines(ix, dels, adds, func(d, a int) {
			h.partner[d-at-1], h.partner[a-at-1] = int32(a), int32(d)
		})
		dels, adds = dels[:0], adds[:0]
	}
	for no := at + 1; no < end; no++ {
		i := no - at - 1
		h.partner[i] = -1
		s := ix.line(no)
		switch {
		case strings.HasPrefix(s, "-"):
			if len(adds) > 0 {
				flush()
			}
			dels = append(dels, no)
			h.oldNo[i] = o
			o++
		case strings.HasPrefix(s, "+"):
			adds = append(adds, no)
			h.newNo[i] = nw
			nw++
		case strings.HasPrefix(s, `\`): // "\ No newline at end of file"
		default:
			flush()
			h.oldNo[i], h.newNo[i] = o, nw
			o++
			nw++
		}
	}
	flush()
	return h
}

// hunkStarts reads "@@ -a,b +c,d @@": the first line's number on each
// side; 1 where the header cannot be read.
func hunkStarts(s string) (oldStart, newStart int) {
	oldStart, newStart = 1, 1
	f := strings.Fields(s)
	num := func(x, sign string) int {
		x = strings.TrimPrefix(x, sign)
		x, _, _ = strings.Cut(x, ",")
		n, err := strconv.Atoi(x)
		if err != nil || n < 0 || n > 1<<30 {
			return 1 // not git's: numbers that fit, whatever the header says
		}
		return max(n, 1) // 0 is an empty side: its first line would be 1
	}
	if len(f) >= 3 {
		oldStart, newStart = num(f[1], "-"), num(f[2], "+")
	}
	return oldStart, newStart
}

// pairLines pairs a block's removed lines with its added ones, in order,
// as git's contrib/diff-highlight does: line by line when the counts are
// equal. Where they differ, each removed line is paired with the first
// added one after the last pair that is like it (a common start and end
// over half its length), so that a line changed beside a line added is
// still highlighted; a block too big for that is left unpaired.
func pairLines(ix *diffIndex, dels, adds []int, pair func(d, a int)) {
	if len(dels) == 0 || len(adds) == 0 {
		return
	}
	if len(dels) == len(adds) {
		for i := range dels {
			pair(dels[i], adds[i])
		}
		return
	}
	if len(dels)*len(adds) > 400 {
		return
	}
	next := 0
	for _, d := range dels {
		a := ix.line(d)[1:]
		for j := next; j < len(adds); j++ {
			b := ix.line(adds[j])[1:]
			if alike(a, b) {
				pair(d, adds[j])
				next = j + 1
				break
			}
		}
	}
}

// alike: a and b share a start and an end that make over half of the
// longer.
func alike(a, b string) bool {
	p := commonPrefix(a, b)
	s := commonSuffix(a[p:], b[p:])
	return 2*(p+s) > max(len(a), len(b))
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func commonSuffix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}

// lineKind is what a line of a file's section is, by its first byte.
type lineKind uint8

const (
	kindHeader  lineKind = iota // the file's header (before its first hunk)
	kindHunk                    // "@@"
	kindContext                 // " "
	kindAdd                     // "+"
	kindDel                     // "-"
	kindOther                   // "\ No newline at end of file", and what is not a diff's
)

func kindOf(f *diffFile, no int, s string) lineKind {
	switch {
	case f.hunks < 0 || no < f.hunks:
		return kindHeader
	case strings.HasPrefix(s, "@@"):
		return kindHunk
	case strings.HasPrefix(s, "+"):
		return kindAdd
	case strings.HasPrefix(s, "-"):
		return kindDel
	case strings.HasPrefix(s, " "), s == "":
		return kindContext
	}
	return kindOther
}

// hiCache is the hunks worked out so far, and each file's hunks' lines,
// so that a screen redrawn costs a map lookup a row. It is dropped whole
// when it holds more than maxCachedLines lines, so that reading through a
// huge push keeps only what was read lately.
type hiCache struct {
	ix     *diffIndex
	pal    *palette
	starts map[int][]int32 // by file (its first line): its "@@" lines
	hunks  map[int]*hunk   // by "@@" line
	lexers map[int]lexerOf // by file (its first line)
	lines  int             // lines held by hunks
	// budget, where set, bounds the time spent lexing in all (spent):
	// for a whole diff written out at once (Colorize).
	budget, spent time.Duration
}

const maxCachedLines = 50000

func newHiCache(ix *diffIndex, pal *palette) *hiCache {
	return &hiCache{ix: ix, pal: pal, starts: map[int][]int32{}, hunks: map[int]*hunk{}, lexers: map[int]lexerOf{}}
}

// hunkOf is the hunk that holds line no of file f (no after f.hunks).
func (c *hiCache) hunkOf(f *diffFile, no int) *hunk {
	st, ok := c.starts[f.first]
	if !ok {
		for l := f.hunks; l >= 0 && l < f.end; l++ {
			if strings.HasPrefix(c.ix.line(l), "@@") {
				st = append(st, int32(l))
			}
		}
		c.starts[f.first] = st
	}
	// The last start at or before no.
	lo, hi := 0, len(st)
	for lo < hi {
		m := (lo + hi) / 2
		if int(st[m]) <= no {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil
	}
	at := int(st[lo-1])
	if h, ok := c.hunks[at]; ok {
		return h
	}
	end := f.end
	if lo < len(st) {
		end = int(st[lo])
	}
	if c.lines > maxCachedLines {
		clear(c.hunks)
		c.lines = 0
	}
	h := newHunk(c.ix, at, end)
	c.hunks[at] = h
	c.lines += end - at
	return h
}

// wordsOf is the changed words of line no (a removed or added line of h)
// against its partner: none when it has none.
func (c *hiCache) wordsOf(h *hunk, no int) []span {
	p := h.partner[no-h.at-1]
	if p < 0 {
		return nil
	}
	if w, ok := h.words[no]; ok {
		return w
	}
	a, b := c.ix.line(no)[1:], c.ix.line(int(p))[1:]
	w, pw := wordDiff(a, b)
	h.words[no], h.words[int(p)] = w, pw
	return w
}
