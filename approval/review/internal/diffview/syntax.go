package diffview

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/chroma/v2"
)

// Syntax colour comes from chroma's lexers, chosen by the file's name:
// a well-kept library of some 250 languages, where a lexer of our own
// would colour a few and wrongly. Only its token types are used: the text
// drawn is always the diff's own bytes, sanitised by termsafe, in the
// view's own SGR colours, whatever the lexer makes of them.

// Syntax classes: what a token is drawn as.
const (
	synNone uint8 = iota
	synKeyword
	synString
	synComment
	synNumber
	synFunction
	synType
	synMeta // preprocessor, decorator, attribute, tag
	synClasses
)

// classOf is the class of a chroma token type.
func classOf(t chroma.TokenType) uint8 {
	switch {
	case t == chroma.KeywordType, t.InSubCategory(chroma.NameBuiltin), t == chroma.NameClass:
		return synType
	case t.InCategory(chroma.Keyword):
		return synKeyword
	case t.InSubCategory(chroma.CommentPreproc):
		return synMeta
	case t.InCategory(chroma.Comment):
		return synComment
	case t.InSubCategory(chroma.LiteralString):
		return synString
	case t.InSubCategory(chroma.LiteralNumber):
		return synNumber
	case t.InSubCategory(chroma.NameFunction):
		return synFunction
	case t == chroma.NameDecorator, t == chroma.NameAttribute, t == chroma.NameTag:
		return synMeta
	}
	return synNone
}

// palette is the colours of the terminal: 0 none, 8 or 256. A diff's
// own colours come first: syntax colours avoid red and green, which
// mean removed and added; on 8 colours a removed or added line keeps
// git's red or green and only context lines take syntax colour; on 256
// a removed or added line has a dark red or green background, its
// changed words a brighter one, and its text the syntax colours.
type palette struct {
	colors int
	syn    [synClasses]string // SGR parameters of each class
}

func newPalette(colors int) *palette {
	p := &palette{colors: colors}
	switch {
	case colors >= 256:
		p.colors = 256
		p.syn = [synClasses]string{"", "38;5;75", "38;5;180", "38;5;244", "38;5;141", "38;5;222", "38;5;80", "38;5;176"}
	case colors > 0:
		p.colors = 8
		p.syn = [synClasses]string{"", "34", "33", "36", "35", "1", "34", "35"}
	}
	return p
}

// Bounds of the lexing, so that a huge hunk costs no more than a screen's
// worth each time a new part of it is drawn: a side of a hunk is lexed in
// chunks of lexChunk lines (one text each, so that a string or comment
// over several lines is coloured right within a chunk: most hunks are
// one chunk), at most lexBytes of each, for at most lexTime (chroma
// lexes some 400 KB a second, so a chunk takes 30 ms or so; the time
// bound is for a lexer whose rules backtrack on hostile text).
const (
	lexChunk = 256
	lexBytes = 32 << 10
	lexTime  = 250 * time.Millisecond
)

// lexerOf is a file's lexer; nil: none (plain text, or no colour).
type lexerOf struct{ l chroma.Lexer }

// lexerFor is the lexer chroma chooses by path's name, none for plain
// text.
func lexerFor(path string) chroma.Lexer {
	l := globalLexIndex().match(path)
	if l == nil || l.Config() == nil || l.Config().Name == "plaintext" {
		return nil
	}
	return l
}

// sideSyntax is one side of a hunk's colours: by line of that side, its
// spans, lexed a chunk at a time, and within a chunk only as far as a
// line drawn, so that the first screen of a hunk costs its rows' lexing.
type sideSyntax struct {
	spans [][]span
	runs  []*lexRun // by chunk: nil until a line of it is drawn
}

// synOf is the syntax spans of line no (of hunk h, in file f) on side,
// lexing its chunk as far as that line when first asked.
func (c *hiCache) synOf(f *diffFile, h *hunk, no, side int) []span {
	if c.pal.colors == 0 {
		return nil
	}
	lx, ok := c.lexers[f.first]
	if !ok {
		lx = lexerOf{lexerFor(f.path)}
		c.lexers[f.first] = lx
	}
	if lx.l == nil {
		return nil
	}
	i := no - h.at - 1
	idx := int(h.newNo[i]) - h.newStart
	if side == sideOld {
		idx = int(h.oldNo[i]) - h.oldStart
	}
	if idx < 0 {
		return nil
	}
	ss := &h.syn[side]
	if ss.spans == nil {
		n := 0
		for j := range h.oldNo {
			if side == sideOld && h.oldNo[j] != 0 || side == sideNew && h.newNo[j] != 0 {
				n++
			}
		}
		ss.spans = make([][]span, n)
		ss.runs = make([]*lexRun, (n+lexChunk-1)/lexChunk)
	}
	if idx >= len(ss.spans) {
		return nil
	}
	k := idx / lexChunk
	if ss.runs[k] == nil {
		ss.runs[k] = c.startChunk(lx.l, h, side, k)
	}
	if c.budget > 0 {
		if c.spent >= c.budget {
			return ss.spans[idx] // what was lexed before the budget ran out
		}
		start := time.Now()
		defer func() { c.spent += time.Since(start) }()
	}
	ss.runs[k].until(idx - k*lexChunk)
	return ss.spans[idx]
}

// startChunk starts lexing chunk k of a side of h, as one text.
func (c *hiCache) startChunk(l chroma.Lexer, h *hunk, side, k int) *lexRun {
	ss := &h.syn[side]
	from, to := k*lexChunk, min((k+1)*lexChunk, len(ss.spans))
	var text strings.Builder
	var starts []int // by line of the chunk: where it starts in text
	idx := 0
	for j := range h.oldNo {
		if side == sideOld && h.oldNo[j] == 0 || side == sideNew && h.newNo[j] == 0 {
			continue
		}
		if idx >= from && idx < to {
			s := c.ix.line(h.at + 1 + j)
			if text.Len()+len(s) > lexBytes {
				break
			}
			starts = append(starts, text.Len())
			text.WriteString(s[min(1, len(s)):])
			text.WriteByte('\n')
		}
		idx++
	}
	return newLexRun(l, text.String(), starts, ss.spans[from:from+len(starts)])
}

// lexRun is a text being lexed, its tokens' classes put as spans on the
// lines (starts) they fall on, as far as a line drawn asks. Tokens are
// matched to the text by counting runes as the lexer does (an invalid
// byte is one U+FFFD): their values are never drawn. A lexer that fails,
// panics or takes over lexTime leaves the rest plain.
type lexRun struct {
	it       chroma.Iterator
	text     string
	starts   []int
	out      [][]span
	at, line int
	spent    time.Duration
	done     bool
}

func newLexRun(l chroma.Lexer, text string, starts []int, out [][]span) *lexRun {
	r := &lexRun{text: text, starts: starts, out: out}
	it, err := l.Tokenise(&chroma.TokeniseOptions{State: "root"}, text)
	if err != nil || len(starts) == 0 {
		r.done = true
	}
	r.it = it
	return r
}

// lexInto lexes text whole.
func lexInto(l chroma.Lexer, text string, starts []int, out [][]span) {
	newLexRun(l, text, starts, out).until(len(starts) - 1)
}

// until lexes on until line (of the run) is coloured whole.
func (r *lexRun) until(line int) {
	if r.done || line >= len(r.starts) {
		return
	}
	end := len(r.text)
	if line+1 < len(r.starts) {
		end = r.starts[line+1]
	}
	start := time.Now()
	defer func() {
		if recover() != nil { // a lexer's bug is no colour, not a crashed prompt
			r.done = true
		}
		r.spent += time.Since(start)
	}()
	for n := 0; r.at < end; n++ {
		if n%64 == 63 && r.spent+time.Since(start) > lexTime {
			r.done = true
			return
		}
		tok := r.it()
		if tok == chroma.EOF {
			r.done = true
			return
		}
		r.put(tok)
	}
}

// put places tok, which starts at r.at.
func (r *lexRun) put(tok chroma.Token) {
	text, starts := r.text, r.starts
	at, end := r.at, r.at
	for n := utf8.RuneCountInString(tok.Value); n > 0 && end < len(text); n-- {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	r.at = end
	cls := classOf(tok.Type)
	if cls == synNone {
		return
	}
	for from := at; from < end; {
		for r.line+1 < len(starts) && starts[r.line+1] <= from {
			r.line++
		}
		stop := end
		if r.line+1 < len(starts) {
			stop = min(stop, starts[r.line+1]-1) // not its newline
		}
		if stop > from {
			r.out[r.line] = append(r.out[r.line], span{from: int32(from - starts[r.line]), to: int32(stop - starts[r.line]), fg: cls})
		}
		if r.line+1 >= len(starts) || stop >= end {
			return
		}
		from = starts[r.line+1]
	}
}
