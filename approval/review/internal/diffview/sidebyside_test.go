package diffview

import (
	"regexp"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// pairPush is one commit's file, picked hunk by hunk: a line added beside
// nothing, then a changed line (11 -> 22) beside its replacement.
func pairPush() *approval.Request {
	header := "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n"
	hunk := "@@ -10,3 +20,4 @@ func f() {\n \tctx := 1\n-\treturn compute(ctx, 41)\n+\tlog.Print(\"new\")\n+\treturn compute(ctx, 42)\n \t}\n"
	return &approval.Request{
		Diff:     header + hunk,
		Pickable: true,
		Commits: []approval.CommitInfo{{ID: plumbing.NewHash("1111111111111111111111111111111111111111"), Message: "m\n",
			Files: []approval.FileDiff{{Path: "x.go", Header: header, Hunks: []string{hunk}}}}},
	}
}

var escapes = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// Side by side a row is not a line: the pair's row holds the removed line
// (left) and its replacement (right). The cursor acts on the left one, Tab
// puts it on the right one, and + - c act on the line the cursor's > is
// drawn beside; s keeps the cursor on its line in the other layout.
func TestSideBySideCursorActsOnItsSide(t *testing.T) {
	m := model.New(pairPush())
	v := newDiffView(newDiffIndex(m, testWords), 200, 30, false)
	v.frame()
	if !v.hi.side.on {
		t.Fatal("not side by side at 200 columns")
	}
	ref := model.Ref{Commit: 0, File: 0, Hunk: 0}
	text := func() string {
		_, line := v.under()
		return v.ix.line(line)
	}
	keys(v, "gJjjj")
	if got := text(); got != "-\treturn compute(ctx, 41)" {
		t.Fatalf("on the pair's row, the cursor is on %q, want the removed line", got)
	}
	keys(v, "-k\t")
	if got := text(); got != "+\treturn compute(ctx, 42)" {
		t.Fatalf("after Tab, the cursor is on %q, want the added line", got)
	}
	keys(v, "-k")
	if m.LineAccepted(ref, 0) || !m.LineAccepted(ref, 1) || m.LineAccepted(ref, 2) {
		t.Errorf("- on each side of the pair: accepted %v %v %v, want the removed and its replacement left out, the line added beside nothing kept",
			m.LineAccepted(ref, 0), m.LineAccepted(ref, 1), m.LineAccepted(ref, 2))
	}
	// The marks: the cursor's > on the right half, each side's x, each
	// side's number (the model's: 11 old, 22 new).
	row := escapes.ReplaceAllString(string(v.drawSide(nil, 0, &v.ix.files[0], 6, v.cur)), "")
	if !strings.Contains(row, " x  11 -") || !strings.Contains(row, ">x  22 +") {
		t.Errorf("the pair's row does not show the cursor on the new side and both lines left out:\n%q", row)
	}
	keys(v, "cnew side\r\tcold side\r")
	cs := m.Comments()
	if len(cs) != 2 || cs[0].Line != 22 || cs[0].Side == approval.SideOld || cs[1].Line != 11 || cs[1].Side != approval.SideOld {
		t.Fatalf("c on each side of the pair: %+v (%s)", cs, v.msg)
	}
	keys(v, "\ts")
	v.frame()
	if v.hi.side.on || text() != "+\treturn compute(ctx, 42)" {
		t.Errorf("s: side by side %v, the cursor on %q, want unified on the added line", v.hi.side.on, text())
	}
	keys(v, "s")
	v.frame()
	if !v.hi.side.on || text() != "+\treturn compute(ctx, 42)" || !v.right {
		t.Errorf("s again: side by side %v, the cursor on %q (right %v), want it on the added line", v.hi.side.on, text(), v.right)
	}
	keys(v, "x")
	if m.HunkState(ref) != model.LeftOut {
		t.Errorf("x side by side: the hunk is %v", m.HunkState(ref))
	}
}
