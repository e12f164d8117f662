package review_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval/review/internal/viewtest"
)

// A reviewer opens a six-file push full screen: the workflow (high risk)
// and the Makefile (medium) come first, as the header says; the 450-line
// generated file is one line until opened; the file list jumps to it by
// number; a search finds the needle inside it; q goes back to the prompt,
// which still decides.
func TestViewMultiFilePush(t *testing.T) {
	v := startView(t, viewtest.MultiFilePush(t), 80, 24)
	v.waitFor("[?]help")
	v.press("d")
	v.golden("first", "Risk first")

	v.press("?")
	v.golden("help", "Any key closes")
	v.press("x")
	v.golden("first", "Risk first")
	v.press("A") // the view decides with a, never with A (an arrow's last byte)
	v.waitFor("a approves (what you left out with x stays out)")

	v.press("f")
	v.golden("list", "Enter go")
	v.press("6\r") // the generated file's number in the list
	v.golden("collapsed", "collapsed: o or Enter")
	v.press("o")
	v.golden("opened", "generated line 1")

	v.press("g/NEEDLE\r") // a capital: case matters, so not found
	v.waitFor(`not found: "NEEDLE"`)
	v.press("/needle\r")
	v.golden("search", "the needle is here")
	if got := v.reversed("the needle is here"); got != "needle" {
		t.Errorf("the match is not shown: the line's reverse video is %q, want \"needle\"", got)
	}
	// An arrow key split by a slow link: Esc, then "[A" later. The view
	// stays (Esc does not leave it), so the A cannot reach the prompt,
	// where it approves.
	v.press("\x1b")
	time.Sleep(100 * time.Millisecond)
	v.press("[A")
	v.waitFor("a approves (what you left out with x stays out)")
	v.press("q")
	v.waitFor("[?]help")
	v.reject()
	assertOnlyViewEscapes(t, v.output())
}

// Where the terminal cannot show a full screen (TERM=dumb), d pages the
// diff as before: no alternate screen, the diff written out.
func TestViewFallsBackOnDumbTerminal(t *testing.T) {
	v := startView(t, viewtest.MultiFilePush(t), 80, 24, "TERM=dumb")
	v.waitFor("[?]help")
	v.press("d")
	v.golden("dumb", "+func A() int { return 2 }")
	v.reject()
	if strings.Contains(v.output(), "\x1b[?1049h") {
		t.Error("a dumb terminal was switched to the alternate screen")
	}
}

// A worker's hostile names and content, full screen: escape sequences,
// a right-to-left override, a newline in a name, a line of 3,000
// characters and wide characters are drawn visibly, each row within the
// screen; nothing but the view's own escapes reaches the terminal; and
// the view is drawn again at the terminal's new size when it changes.
func TestViewHostilePush(t *testing.T) {
	long := strings.Repeat("very long line ", 200) + "TAIL"
	push := map[string]string{
		"README.md":             "# project\n",
		"evil\x1b[2J\x1b[H.txt": "clear\x1b[2J\x1b[Hfake prompt\n\x1b]52;c;ZXZpbA==\x07clipboard\n\x1b[8mhidden\x1b[m\r\n",
		"deploy\u202Etxt.sh":    "#!/bin/sh\nif ok \u202E } \u2066 then\n",
		"new\nline.md":          "a name with a newline\n",
		"wide/\u6f22\u5b57.md":  "\u6f22\u5b57\u30c6\u30b9\u30c8 wide, e\u0301 combined\n" + long + "\n",
	}
	v := startView(t, viewtest.GitPush(t, map[string]string{"README.md": "# project\n"}, push), 80, 24)
	v.waitFor("[?]help")
	v.press("d")
	v.golden("hostile", "Risk first")
	v.press("G")
	v.golden("hostile-end", "combined")
	v.resize(100, 30)
	v.golden("resized", "file 4/4 line")
	// An arrow key split by a slow link: Esc, then "[A" later. The view
	// stays (Esc does not leave it), so the A cannot reach the prompt,
	// where it approves.
	v.press("\x1b")
	time.Sleep(100 * time.Millisecond)
	v.press("[A")
	v.waitFor("a approves (what you left out with x stays out)")
	v.press("q")
	v.waitFor("[?]help")
	v.reject()
	assertOnlyViewEscapes(t, v.output())
}

// At 300 files and 20,000 lines the view goes where it is asked: the file
// list takes a number, G the last line; and a request that goes away
// while it is shown ends the view, back on the prompt's screen with the
// cursor shown, and the prompt says it was cancelled.
func TestViewBigPushAndCancel(t *testing.T) {
	r := viewtest.BigPush(t, 300, 67)
	v := startView(t, r, 100, 30)
	v.waitFor("[?]help")
	v.press("d")
	v.waitFor("file 1/300 line 1/")
	v.press("f250\r")
	v.waitFor("file 250/300 line ")
	v.press("G")
	total := strings.Count(r.Diff, "\n") + 300         // and a banner a file
	v.waitFor(fmt.Sprintf("line %d/%d", total, total)) // the cursor on the last line
	if err := v.proc.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if got := v.decision(); got != "canceled" {
		t.Errorf("decision %q, want canceled", got)
	}
	out := v.output()
	if i, j := strings.LastIndex(out, "\x1b[?1049h"), strings.LastIndex(out, "\x1b[?1049l"); i < 0 || j < i {
		t.Errorf("the view did not leave the alternate screen (entered at %d, left at %d)", i, j)
	}
	if !strings.Contains(v.screen(), "[?]help") {
		t.Errorf("the prompt's screen is not back:\n%s", v.screen())
	}
}
