package review_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hinshun/vt10x"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/internal/viewtest"
)

// goBase and goPush are a Go file before and after a push: one character
// changed in a long line (41 to 42), and a raw string over three lines
// added, whose later lines only a lexer that sees the whole hunk knows to
// be a string.
const goBase = `package main

import "fmt"

// greet says hello to the one named, in the words the caller asks for.
func greet(name string) string {
	return fmt.Sprintf("hello, %s: the answer is %d, and the question is a long one", name, 41)
}

func main() { fmt.Println(greet("world")) }
`

var goPush = strings.Replace(goBase, "name, 41)", "name, 42)", 1) + "\nconst banner = `first line of a raw string\nsecond line, still inside the string\nthird line`\n"

func goRequest(t *testing.T) *approval.Request {
	return viewtest.GitPush(t, map[string]string{"main.go": goBase}, map[string]string{"main.go": goPush})
}

// cellClass is what a cell is drawn as, one letter: its colour (k a
// keyword's, s a string's, o a comment's, n a number's, f a function's,
// t a type's, m meta; r g y b p c the 8 colours; . the default), in
// capitals where it is highlighted (a changed word's brighter
// background on 256 colours, reverse video on 8), * a highlighted
// default colour, # reverse video of the default colours (a search's
// match, the '>' that says a line goes on past the edge).
func cellClass(g vt10x.Glyph) byte {
	fg, bg := g.FG, g.BG
	hi := false
	if g.Mode&1 != 0 { // reverse: vt10x has swapped them
		fg, bg, hi = bg, fg, true
	}
	word := bg == 28 || bg == 124
	c := byte('.')
	switch fg {
	case 75:
		c = 'k'
	case 180:
		c = 's'
	case 244:
		c = 'o'
	case 141:
		c = 'n'
	case 222:
		c = 'f'
	case 80:
		c = 't'
	case 176:
		c = 'm'
	case 1, 9:
		c = 'r'
	case 2, 10:
		c = 'g'
	case 3, 11:
		c = 'y'
	case 4, 12:
		c = 'b'
	case 5, 13:
		c = 'p'
	case 6, 14:
		c = 'c'
	}
	switch {
	case (hi || word) && c == '.' && word:
		c = '*'
	case hi && c == '.':
		c = '#'
	case hi || word:
		c -= 'a' - 'A'
	}
	return c
}

// paint is the screen's colours, a letter a cell (cellClass), row by row.
func (v *viewTerm) paint() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	cols, rows := v.vt.Size()
	var b strings.Builder
	for y := 0; y < rows; y++ {
		for x := 0; x < cols; x++ {
			b.WriteByte(cellClass(v.vt.Cell(x, y)))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// rowPaint is the text and the colours (cellClass) of the first row
// that shows text.
func (v *viewTerm) rowPaint(text string) (row, paint string) {
	v.t.Helper()
	scr, pt := strings.Split(v.screen(), "\n"), strings.Split(v.paint(), "\n")
	for y := range scr {
		if strings.Contains(scr[y], text) && y < len(pt) {
			return scr[y], pt[y]
		}
	}
	v.t.Fatalf("no row shows %q:\n%s", text, v.screen())
	return "", ""
}

// highlighted is the characters of row drawn highlighted (capitals or *
// in its paint), not the default reverse video (#).
func highlighted(row, paint string) string {
	var out []rune
	for i, r := range []rune(row) {
		if i < len(paint) && (paint[i] >= 'A' && paint[i] <= 'Z' || paint[i] == '*') {
			out = append(out, r)
		}
	}
	return string(out)
}

// goldenPaint checks the screen's colours against a golden file (or
// writes it with -update), as golden does its text.
func (v *viewTerm) goldenPaint(name string) {
	v.t.Helper()
	path := filepath.Join("testdata", "view", name+".paint.golden")
	if *update {
		if err := os.WriteFile(path, []byte(v.paint()), 0o644); err != nil {
			v.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		v.t.Fatalf("%v (run with -update)", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for v.paint() != string(want) {
		if time.Now().After(deadline) {
			v.t.Fatalf("the screen's colours differ from %s; they are:\n%s\nwant:\n%s", path, v.paint(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A one-character change in a long line, on a 256-colour terminal at
// 80x24: only that character is highlighted, on both lines of the pair;
// the Go around it is coloured by chroma's lexer (a keyword, a comment),
// and the raw string's later lines are a string's colour, since the
// hunk's side is lexed as one text.
func TestViewWordHighlightAndSyntax256(t *testing.T) {
	v := startView(t, goRequest(t), 80, 24, "TERM=xterm-256color")
	v.waitFor("[?]help")
	v.press("d")
	v.golden("go-256-80", "third line")
	v.goldenPaint("go-256-80")
	// The change is past the screen's edge: the '>' there says so in a
	// changed word's colour, and it is the only thing highlighted; to
	// the right, only the changed character is.
	for _, sign := range []string{"-", "+"} {
		if row, p := v.rowPaint(sign + "       return"); highlighted(row, p) != ">" {
			t.Errorf("the %s line highlights %q, want only the edge's >:\n%s\n%s", sign, highlighted(row, p), row, p)
		}
	}
	v.press("\x1b[C")
	v.waitFor("(right 40)")
	for _, want := range []string{"1", "2"} {
		if row, p := v.rowPaint("name, 4" + want); highlighted(row, p) != want {
			t.Errorf("the line of 4%s highlights %q, want only the changed %q:\n%s\n%s", want, highlighted(row, p), want, row, p)
		}
	}
	v.press("\x1b[D")
	v.waitGone("(right ")
	row, p := v.rowPaint("+second line, still inside")
	if i := strings.Index(row, "second"); p[i] != 's' {
		t.Errorf("a raw string's second line is not coloured as a string:\n%s\n%s", row, p)
	}
	row, p = v.rowPaint(" func greet")
	if i := strings.Index(row, "func"); p[i:i+4] != "kkkk" {
		t.Errorf("the keyword func is not coloured:\n%s\n%s", row, p)
	}
	v.press("q")
	v.waitFor("[?]help")
	v.reject()
	assertOnlyViewEscapes(t, v.output())
}

// On 8 colours (TERM=xterm) at 120x40 a removed or added line keeps git's
// red or green whatever its syntax, the changed character in reverse
// video; only context lines take syntax colour, in colours that are
// neither red nor green.
func TestViewWordHighlightAndSyntax8(t *testing.T) {
	v := startView(t, goRequest(t), 120, 40)
	v.waitFor("[?]help")
	v.press("d")
	v.golden("go-8-120", "third line")
	v.goldenPaint("go-8-120")
	row, p := v.rowPaint("+       return")
	if highlighted(row, p) != "2" {
		t.Errorf("the added line highlights %q, want \"2\":\n%s\n%s", highlighted(row, p), row, p)
	}
	// From its marker: the gutter before it (numbers, marks) is not the line's.
	if i := strings.Index(row, "+       return"); strings.Trim(strings.ToLower(p[i:len(strings.TrimRight(row, " "))]), "g") != "" {
		t.Errorf("an added line is not all green:\n%s\n%s", row, p)
	}
	row, p = v.rowPaint(" func greet")
	if i := strings.Index(row, "func"); p[i:i+4] != "bbbb" {
		t.Errorf("the keyword func on a context line is not blue:\n%s\n%s", row, p)
	}
	v.press("q")
	v.waitFor("[?]help")
	v.reject()
	assertOnlyViewEscapes(t, v.output())
}

// At 200 columns the diff is side by side: the old line and its number on
// the left, the new on the right, the pair on one row; s shows it unified,
// and s again side by side. At 120 columns it is unified until s.
func TestViewSideBySide(t *testing.T) {
	v := startView(t, goRequest(t), 200, 50, "TERM=xterm-256color")
	v.waitFor("[?]help")
	v.press("d")
	v.golden("side-200", "third line")
	v.goldenPaint("side-200")
	row, p := v.rowPaint("   7 -")
	if !strings.Contains(row, "   7 +") || !strings.Contains(row, "\u2502") {
		t.Errorf("the pair is not on one row, old left and new right:\n%s", row)
	}
	if got := highlighted(row, p); got != ">>" {
		t.Errorf("the pair's row highlights %q, want the edge of each side, where the change is past it:\n%s\n%s", got, row, p)
	}
	v.press("\x1b[C")
	v.waitFor("(right 49)")
	row, p = v.rowPaint("   7 -")
	if got := highlighted(row, p); got != "12" || !strings.Contains(row, "41)") || !strings.Contains(row, "42)") {
		t.Errorf("scrolled right, the pair's row highlights %q, want the changed \"12\" beside each other's line:\n%s\n%s", got, row, p)
	}
	v.press("\x1b[D")
	v.waitGone("(right ")
	v.press("s")
	v.waitFor("unified: s shows")
	v.rowPaint("+       return")
	v.press("s")
	v.waitFor("side by side: s shows")
	v.rowPaint("   7 -")
	// A search finds a line side by side, and shows the match.
	v.press("g/still inside\r")
	v.waitFor("found \"still inside\"")
	if got := v.reversed("second line, still inside"); got != "still inside" {
		t.Errorf("side by side, the match is not shown: the row's reverse video is %q", got)
	}
	// Side by side the cursor acts on the line its > is beside: c on the
	// pair's row comments on the removed line (old 7); Tab, then c, on
	// the added one (new 7). Each half shows its own * and the > moves.
	v.press("gJjjjj")
	v.waitFor(">    7 -")
	v.press("cold side\r")
	v.waitFor("1 comment")
	if row, _ := v.rowPaint("7 -        return"); !strings.Contains(row, "> *  7 -") || strings.Contains(row, "*  7 +") {
		t.Errorf("c side by side: want the removed line alone commented, the cursor beside it:\n%s", row)
	}
	v.press("\tcnew side\r")
	v.waitFor("2 comments")
	if row, _ := v.rowPaint("7 -        return"); !strings.Contains(row, "  *  7 -") || !strings.Contains(row, "> *  7 +") {
		t.Errorf("Tab then c side by side: want both lines commented, the cursor on the new side:\n%s", row)
	}
	v.resize(120, 40)
	v.waitFor("file 1/1")
	v.press("q")
	v.waitFor("[?]help")
	v.reject()
	assertOnlyViewEscapes(t, v.output())

	w := startView(t, goRequest(t), 120, 40)
	w.waitFor("[?]help")
	w.press("d")
	w.waitFor("file 1/1")
	w.rowPaint("+       return")
	w.press("s")
	w.golden("side-120", "side by side: s shows")
	w.press("q")
	w.waitFor("[?]help")
	w.reject()
}

// A hostile Go file whose strings and comments hold escape sequences
// (clear the screen, OSC 52, hide text), bidi overrides, C1 controls as
// characters and as raw bytes: coloured by its lexer, each of them drawn
// visibly, and nothing but the view's own escapes reaches the terminal,
// unified and side by side.
func TestViewHostileFileColoured(t *testing.T) {
	hostile := "package evil\n\n// clear\x1b[2J\x1b[H in a comment, \u202Erev\u202C and \u009b31m\n" +
		"var s = \"osc\x1b]52;c;ZXZpbA==\x07 and \u009b2J raw C1 \x1b[8mhidden\"\n" +
		"/* a comment\n over lines \x1b[31m red? \u2066 */\n" +
		"var r = `raw\n\x1b[?1049l leave the screen`\n"
	r := viewtest.GitPush(t, map[string]string{"evil.go": "package evil\n"}, map[string]string{"evil.go": hostile})
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		v := startView(t, r, size[0], size[1], "TERM=xterm-256color")
		v.waitFor("[?]help")
		v.press("d")
		v.waitFor("leave the screen")
		row, p := v.rowPaint("in a comment")
		if !strings.Contains(row, "^[[2J^[[H") || !strings.Contains(row, "<U+202E>") || !strings.Contains(row, "<U+009B>") {
			t.Errorf("the comment's escapes are not drawn visibly:\n%s", row)
		}
		if i := strings.Index(row, "in a comment"); p[i] != 'o' {
			t.Errorf("the comment is not coloured as one:\n%s\n%s", row, p)
		}
		row, _ = v.rowPaint("raw C1")
		if !strings.Contains(row, "<U+009B>2J") || !strings.Contains(row, "^[]52") {
			t.Errorf("the string's raw C1 byte or OSC is not drawn visibly:\n%s", row)
		}
		v.golden("hostile-colour-"+map[int]string{80: "80", 200: "200"}[size[0]], "leave the screen")
		v.press("s") // and the other layout: side by side at 80, unified at 200
		v.waitFor(map[int]string{80: "side by side: s shows", 200: "unified: s shows"}[size[0]])
		v.waitFor("^[[?1049l leave the screen")
		v.press("q")
		v.waitFor("[?]help")
		v.reject()
		assertOnlyViewEscapes(t, v.output())
	}
}

// waitGone waits until the screen no longer shows text.
func (v *viewTerm) waitGone(text string) {
	v.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(v.screen(), text) {
		if time.Now().After(deadline) {
			v.t.Fatalf("the screen still shows %q:\n%s", text, v.screen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The line prompt's hunk picker shows a hunk as the view does, on a
// 256-colour terminal at 120x40: the words added to a changed line
// highlighted, a.go's number coloured by the Go lexer, the hostile
// escape in a line drawn visibly; nothing but airlock's SGR reaches the
// terminal.
func TestPromptHunkHighlighted(t *testing.T) {
	v := startView(t, hunkRequest(t), 120, 40, "TERM=xterm-256color")
	v.waitFor("[p]ick hunks")
	v.press("p")
	v.waitFor("(1/2) Accept this hunk of a.go")
	row, p := v.rowPaint("+line 3 changed")
	if got := highlighted(row, p); got != " changed" {
		t.Errorf("the changed line highlights %q, want \" changed\":\n%s\n%s", got, row, p)
	}
	row, p = v.rowPaint("-line 3")
	if i := strings.Index(row, "3"); p[i] != 'n' {
		t.Errorf("the number on a removed line is not coloured as one:\n%s\n%s", row, p)
	}
	v.golden("pick-256", "(1/2) Accept this hunk of a.go")
	v.goldenPaint("pick-256")
	v.press("y")
	v.waitFor("(2/2) Accept this hunk of a.go")
	if row, _ := v.rowPaint("line 20b added"); !strings.Contains(row, "^[[8m hidden") {
		t.Errorf("the hidden-text escape is not drawn visibly:\n%s", row)
	}
	v.press("\x03")
	time.Sleep(200 * time.Millisecond)
	assertOnlyViewEscapes(t, v.output())
}
