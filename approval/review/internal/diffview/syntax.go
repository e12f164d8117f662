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
// spans, lexed a chunk at a time.
type sideSyntax struct {
	spans [][]span
	lexed []bool // by chunk
}

// synOf is the syntax spans of line no (of hunk h, in file f) on side,
// lexing its chunk when first asked.
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
		ss.lexed = make([]bool, (n+lexChunk-1)/lexChunk)
	}
	if idx >= len(ss.spans) {
		return nil
	}
	if k := idx / lexChunk; !ss.lexed[k] {
		ss.lexed[k] = true
		c.lexChunk(lx.l, h, side, k)
	}
	return ss.spans[idx]
}

// lexChunk lexes chunk k of a side of h as one text, and records the
// tokens' classes by line.
func (c *hiCache) lexChunk(l chroma.Lexer, h *hunk, side, k int) {
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
	lexInto(l, text.String(), starts, ss.spans[from:from+len(starts)])
}

// lexInto lexes text and puts each token's class, as spans, on the line
// (starts) it falls on. Tokens are matched to text by counting runes,
// as the lexer counts them (an invalid byte is one U+FFFD): their values
// are never drawn. A lexer that fails or panics leaves the rest plain.
func lexInto(l chroma.Lexer, text string, starts []int, out [][]span) {
	defer func() { _ = recover() }() // a lexer's bug is no colour, not a crashed prompt
	it, err := l.Tokenise(&chroma.TokeniseOptions{State: "root"}, text)
	if err != nil {
		return
	}
	deadline := time.Now().Add(lexTime)
	at, line := 0, 0
	for n := 0; ; n++ {
		if n%256 == 255 && time.Now().After(deadline) {
			return
		}
		tok := it()
		if tok == chroma.EOF || at >= len(text) {
			return
		}
		end := at
		for n := utf8.RuneCountInString(tok.Value); n > 0 && end < len(text); n-- {
			_, size := utf8.DecodeRuneInString(text[end:])
			end += size
		}
		if cls := classOf(tok.Type); cls != synNone {
			for from := at; from < end; {
				for line+1 < len(starts) && starts[line+1] <= from {
					line++
				}
				stop := end
				if line+1 < len(starts) {
					stop = min(stop, starts[line+1]-1) // not its newline
				}
				if stop > from {
					out[line] = append(out[line], span{from: int32(from - starts[line]), to: int32(stop - starts[line]), fg: cls})
				}
				if line+1 >= len(starts) || stop >= end {
					break
				}
				from = starts[line+1]
			}
		}
		at = end
	}
}
