package diffview

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// spanText is the text of a's spans, joined by |.
func spanText(a string, spans []span) string {
	var out []string
	for _, s := range spans {
		out = append(out, a[s.from:s.to])
	}
	return strings.Join(out, "|")
}

func TestWordDiff(t *testing.T) {
	long := strings.Repeat("x := compute(alpha, beta, gamma) // ", 4)
	for _, tc := range []struct{ a, b, wantA, wantB string }{
		// One character in a long line: that character alone.
		{long + "41", long + "42", "1", "2"},
		{"return count", "return counts", "", "s"},
		{"f(a, b)", "f(a, extra, b)", "", "extra, "},
		{"if x > 0 {", "if x >= 0 {", "", "="},
		// Words moved and changed in two places: both, not all between.
		{"alpha beta gamma delta", "alpha BETA gamma DELTA", "beta|delta", "BETA|DELTA"},
		// Multi-byte characters are kept whole.
		{"h\u00e9llo w\u00f6rld", "h\u00e9llo w\u00f8rld", "\u00f6", "\u00f8"},
		// Nothing in common but spaces: changed whole, nothing picked out.
		{"foo bar", "baz qux", "", ""},
	} {
		wa, wb := wordDiff(tc.a, tc.b)
		if got := spanText(tc.a, wa); got != tc.wantA {
			t.Errorf("wordDiff(%q, %q): old side %q, want %q", tc.a, tc.b, got, tc.wantA)
		}
		if got := spanText(tc.b, wb); got != tc.wantB {
			t.Errorf("wordDiff(%q, %q): new side %q, want %q", tc.a, tc.b, got, tc.wantB)
		}
	}
}

// A pair of minified lines too long for the word table: their common
// start and end still narrow the highlight.
func TestWordDiffOfHugeLines(t *testing.T) {
	a := strings.Repeat("a,b;", 20000) + "OLD" + strings.Repeat(";c", 20000)
	b := strings.Repeat("a,b;", 20000) + "NEW" + strings.Repeat(";c", 20000)
	start := time.Now()
	wa, wb := wordDiff(a, b)
	if spanText(a, wa) != "OLD" || spanText(b, wb) != "NEW" {
		t.Errorf("huge lines: %q, %q, want OLD, NEW", spanText(a, wa), spanText(b, wb))
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("the word diff of two 160 KB lines took %v", d)
	}
}

// The index finds the lexer chroma's own Match finds, for names of every
// kind: an extension, a name, a backup suffix, none.
func TestLexIndexMatchesChroma(t *testing.T) {
	for _, name := range []string{
		"main.go", "src/x.py", "Makefile", "Dockerfile", "foo.c.orig", "a.tar.gz", ".bashrc",
		"README.md", "web/index.html", "x.unknownext", "LICENSE", "foo.h", "run.sh", "CMakeLists.txt",
		"x.go.in", "app.ts", "style.css", "lib.rs", "ci.yaml", "deploy\u202etxt.sh", "evil\x1b[2J.go",
		"Gemfile.lock", "x.1", "config.toml", "a.json", "q.sql", "go.mod", ".env.local", "x.bak",
	} {
		want, got := lexers.Match(name), globalLexIndex().match(name)
		if (want == nil) != (got == nil) || want != nil && want.Config().Name != got.Config().Name {
			t.Errorf("%q: the index finds %v, chroma %v", name, lexerName(got), lexerName(want))
		}
	}
}

func lexerName(l chroma.Lexer) string {
	if l == nil {
		return "none"
	}
	return l.Config().Name
}

// Tokens are put back on the text by counting runes as the lexer does:
// an invalid byte, a carriage return and a comment over lines land where
// they are in the diff's bytes.
func TestLexIntoKeepsOffsets(t *testing.T) {
	text := "s := \"x\xffy\"\r\n/* c\r\nd */ b := 1\n"
	lines := strings.SplitAfter(text, "\n")
	starts := []int{0, len(lines[0]), len(lines[0]) + len(lines[1])}
	out := make([][]span, 3)
	lexInto(lexerFor("a.go"), text, starts, out)
	find := func(line int, cls uint8) string {
		var got []string
		for _, s := range out[line] {
			if s.fg == cls {
				got = append(got, strings.TrimSuffix(lines[line], "\n")[s.from:s.to])
			}
		}
		return strings.Join(got, "|")
	}
	if got := find(0, synString); got != "\"x\xffy\"" {
		t.Errorf("the string on line 1 is %q", got)
	}
	if got := find(1, synComment); got != "/* c\r" {
		t.Errorf("the comment on line 2 is %q", got)
	}
	if got := find(2, synComment); got != "d */" {
		t.Errorf("the comment's end on line 3 is %q", got)
	}
	if got := find(2, synNumber); got != "1" {
		t.Errorf("the number on line 3 is %q", got)
	}
}

// A hunk's lines numbered from its header, a changed line paired with the
// added line like it rather than the one before it, and side by side the
// pair on one row.
func TestHunkNumbersAndPairs(t *testing.T) {
	diff := "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -10,3 +20,4 @@ func f() {\n" +
		" \tctx := 1\n-\treturn compute(ctx, 41)\n+\tlog.Print(\"new\")\n+\treturn compute(ctx, 42)\n \t}\n"
	ix := newDiffIndex(model.New(&approval.Request{Diff: diff}), testWords)
	v := newDiffView(ix, 200, 30, true)
	v.frame()
	f := &ix.files[0]
	h := v.hi.c.hunkOf(f, 5)
	if h == nil || h.at != 3 {
		t.Fatalf("hunk of line 5: %+v", h)
	}
	var nums []string
	for i := range h.oldNo {
		nums = append(nums, fmt.Sprintf("%d/%d", h.oldNo[i], h.newNo[i]))
	}
	if got := strings.Join(nums, " "); got != "10/20 11/0 0/21 0/22 12/23" {
		t.Errorf("line numbers %s", got)
	}
	// They place lines in the lexed text; what is drawn is the model's,
	// which must agree.
	for no := h.at + 1; no < h.end; no++ {
		if l, ok := ix.modelLine(f, no); !ok || int32(l.Old) != h.oldNo[no-h.at-1] || int32(l.New) != h.newNo[no-h.at-1] {
			t.Errorf("line %d: the model numbers it %d/%d (%v)", no, l.Old, l.New, ok)
		}
	}
	if h.partner[1] != 7 || h.partner[3] != 5 || h.partner[2] != -1 {
		t.Errorf("pairs %v: want the removed line (5) with the second added line (7)", h.partner)
	}
	if !v.hi.side.on {
		t.Fatal("not side by side at 200 columns")
	}
	var rows []string
	for _, r := range v.sideRows(0) {
		rows = append(rows, fmt.Sprintf("%d:%d", r.l, r.r))
	}
	if got := strings.Join(rows, " "); got != "0:0 1:1 2:2 3:3 4:4 -1:6 5:7 8:8" {
		t.Errorf("side-by-side rows %s", got)
	}
}

// A hunk of 200,000 added lines costs at most a chunk's lexing, not the hunk's:
// its first screen and its last are each drawn in well under a second,
// and only the chunks drawn are lexed.
func TestHugeHunkLexingIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("diff --git a/big.go b/big.go\nnew file mode 100644\n--- /dev/null\n+++ b/big.go\n@@ -0,0 +1,200000 @@\n")
	for i := range 200000 {
		fmt.Fprintf(&b, "+var v%d = \"a string %d\" // and a comment\n", i, i)
	}
	ix := newDiffIndex(model.New(&approval.Request{Diff: b.String()}), testWords)
	v := newDiffView(ix, 120, 40, true)
	v.hi = newRender(ix, 256) // on 8 colours an added line's syntax is not drawn, so not lexed
	v.open[0] = true
	v.layout()
	for _, top := range []int{0, v.maxTop()} {
		v.top = top
		start := time.Now()
		v.frame()
		if d := time.Since(start); d > time.Second {
			t.Errorf("the screen at row %d took %v", top, d)
		}
	}
	h := v.hi.c.hunkOf(&ix.files[0], 10)
	lexed, coloured := 0, 0
	for _, r := range h.syn[sideNew].runs {
		if r != nil {
			lexed++
		}
	}
	for _, sp := range h.syn[sideNew].spans {
		if len(sp) > 0 {
			coloured++
		}
	}
	if lexed != 2 {
		t.Errorf("%d chunks of %d lexed, want 2 (the first screen's and the last's)", lexed, len(h.syn[sideNew].runs))
	}
	// The first screen's chunk is lexed as far as the screen; the
	// last's from its start to the end.
	if coloured > 2*lexChunk {
		t.Errorf("%d lines coloured, want at most two chunks'", coloured)
	}
	if sp := h.syn[sideNew].spans[199990]; len(sp) == 0 {
		t.Error("the last screen's lines are not coloured")
	}
}

// Without colour (NO_COLOR) nothing is coloured, and a changed word is
// still seen: underlined, the only attribute on the row besides the
// edge's.
func TestNoColourUnderlinesChangedWords(t *testing.T) {
	diff := "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-\treturn compute(ctx, 41)\n+\treturn compute(ctx, 42)\n"
	ix := newDiffIndex(model.New(&approval.Request{Diff: diff}), testWords)
	v := newDiffView(ix, 80, 24, false)
	out := string(v.frame())
	for _, want := range []string{"\x1b[4m1\x1b[m", "\x1b[4m2\x1b[m"} {
		if !strings.Contains(out, want) {
			t.Errorf("the screen lacks %q:\n%q", want, out)
		}
	}
	for _, sgr := range regexp.MustCompile(`\x1b\[[0-9;]*m`).FindAllString(out, -1) {
		switch sgr {
		case "\x1b[m", "\x1b[1m", "\x1b[4m", "\x1b[7m": // reset, bold banner, changed word, bars
		default:
			t.Errorf("a colour without colour: %q in\n%q", sgr, out)
		}
	}
}

func TestHunkStarts(t *testing.T) {
	for _, tc := range []struct {
		line     string
		old, new int
	}{
		{"@@ -4,7 +4,11 @@ import \"fmt\"", 4, 4},
		{"@@ -0,0 +1,3 @@", 1, 1},
		{"@@ -12 +30 @@", 12, 30},
		{"@@ -99999999999999,1 +x @@", 1, 1},
		{"@@", 1, 1},
	} {
		if o, n := hunkStarts(tc.line); o != tc.old || n != tc.new {
			t.Errorf("hunkStarts(%q) = %d, %d, want %d, %d", tc.line, o, n, tc.old, tc.new)
		}
	}
}

// w indexes the diff again (space.go): side by side, the rows and
// hunks worked out of the old index go with it, and the view draws the
// new one (a file fewer: its only change was whitespace).
func TestSpaceKeySideBySide(t *testing.T) {
	diff := "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1,2 +1,2 @@\n-x := 1\n+x  :=  1\n y := 2\n" +
		"diff --git a/b.go b/b.go\n--- a/b.go\n+++ b/b.go\n@@ -1,3 +1,4 @@\n a := 1\n-b := 2\n+b := 3\n+c := 4\n d := 5\n"
	r := &approval.Request{Diff: diff}
	m := model.New(r)
	v := newDiffView(newDiffIndex(m, testWords), 200, 30, true)
	v.words = testWords
	v.spaced = func(space bool) *model.Review {
		if space {
			return model.NewIgnoringSpace(r, r.Diff)
		}
		return m
	}
	plain := regexp.MustCompile(`\x1b\[[0-9;]*m`)
	before := plain.ReplaceAllString(string(v.frame()), "")
	if !v.hi.side.on || !strings.Contains(before, "x  :=  1") {
		t.Fatalf("not side by side, or a.go not shown:\n%q", before)
	}
	v.handle('w')
	after := plain.ReplaceAllString(string(v.frame()), "")
	if strings.Contains(after, "x  :=  1") || !strings.Contains(after, "c := 4") || !v.hi.side.on {
		t.Errorf("after w, side by side: a.go's whitespace change is still shown, or b.go is not:\n%q", after)
	}
	v.handle('w')
	if again := plain.ReplaceAllString(string(v.frame()), ""); !strings.Contains(again, "x  :=  1") {
		t.Errorf("w again does not show the whitespace change:\n%q", again)
	}
}
