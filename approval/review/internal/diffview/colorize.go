package diffview

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// colorizeBudget bounds the syntax colour of a whole diff written out at
// once (the pager's path, which has no screen to stop at): past it,
// lines keep git's colours and their changed words, without syntax. A
// 20,000-line diff is then written in some 130 ms on 256 colours (10 ms
// on 8, where only context lines are lexed), where the reviewer waits
// for the pager.
const colorizeBudget = 100 * time.Millisecond

// Colorize is text, a unified diff, sanitised and coloured for the line
// prompt and the pager as the view draws it: git's colours, the changed
// words of paired lines, syntax colour on colors (8 or 256; 0: none, the
// text only sanitised). text may also be a file's hunks, or a single
// removed or added line, of the file path names. Every fragment goes
// through termsafe; the only escapes in the result are SGR ones.
func Colorize(text, path string, colors int) string {
	if colors == 0 {
		return termsafe.Text(text)
	}
	// A part of a file's diff is read as the file's: a header line, and
	// an "@@" line for lines outside a hunk, neither written out.
	var synth strings.Builder
	if !strings.HasPrefix(text, "diff --git ") {
		name := strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f || r == ' ' {
				return '_'
			}
			return r
		}, path)
		if name == "" {
			name = "-"
		}
		synth.WriteString("diff --git a/" + name + " b/" + name + "\n")
		if !strings.HasPrefix(text, "@@") {
			synth.WriteString("@@ -1 +1 @@\n")
		}
	}
	skip := strings.Count(synth.String(), "\n")
	ix := newDiffIndex(textReview(synth.String()+text), Words{})
	v := &diffView{ix: ix, hi: newRender(ix, colors)}
	v.hi.c.budget = colorizeBudget
	b := make([]byte, 0, len(text)+len(text)/4)
	for i := range ix.files {
		f := &ix.files[i]
		for no := max(f.first, skip); no < f.end; no++ {
			s := ix.line(no)
			kind := kindOf(f, no, s)
			b = v.paintText(b, kind, s, v.lineStyles(f, no, kind, s))
			b = append(b, '\n')
		}
	}
	return string(b)
}

// paintText appends s in its styles, as text: tabs kept, no cells
// counted.
func (v *diffView) paintText(b []byte, kind lineKind, s string, st []style) []byte {
	cur, open := style(0), false
	if kind != kindContext && kind != kindOther {
		b, open = v.hi.sgr(b, kind, 0), true
	}
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && (st[j] == st[i] || !utf8.RuneStart(s[j])) {
			j++
		}
		if st[i] != cur {
			cur, open = st[i], true
			b = v.hi.sgr(b, kind, cur)
		}
		b = append(b, termsafe.Text(s[i:j])...)
		i = j
	}
	if open {
		b = append(b, sgrReset...)
	}
	return b
}

// textReview is text read as a review with nothing to pick and no flag,
// as it is: Colorize colours the text it is given (difftext's folding of
// line endings is the caller's to ask for).
func textReview(text string) *model.Review {
	return &model.Review{Request: &approval.Request{}, Diff: text, Commits: []model.Commit{{Files: model.ParseDiff(text, 0)}}}
}
