package diffview

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval/review/internal/viewtest"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// keys plays keys into v, as the reviewer types them.
func keys(v *diffView, s string) {
	for _, k := range s {
		v.handle(k)
	}
}

// The cursor's jumps and what acts under it: J to a hunk, } to the next
// flagged file, c on a hunk's "@@" line comments on its first line, ) finds
// the comment again, a range across files is refused, m marks the file
// viewed and goes on to the next.
func TestCursorJumpsAndActs(t *testing.T) {
	m := model.New(viewtest.MultiFilePush(t))
	v := newDiffView(newDiffIndex(m, testWords), 80, 24, false)
	at := func() string {
		f, line := v.under()
		if line < 0 {
			return "banner " + f.path
		}
		return f.path + ": " + v.ix.line(line)
	}
	keys(v, "J")
	if got := at(); got != "deploy/id_rsa: @@ -0,0 +1,3 @@" {
		t.Errorf("J: %s", got)
	}
	keys(v, "}")
	if got := at(); got != "banner .github/workflows/ci.yml" {
		t.Errorf("}: %s", got)
	}
	keys(v, "{")
	if got := at(); got != "banner deploy/id_rsa" {
		t.Errorf("{: %s", got)
	}
	keys(v, "Jcnot a key\r")
	cs := m.Comments()
	if len(cs) != 1 || cs[0].Path != "deploy/id_rsa" || cs[0].Line != 1 || cs[0].Text != "not a key" {
		t.Fatalf("the comment: %+v (%s)", cs, v.msg)
	}
	keys(v, "g)")
	if got := at(); got != "deploy/id_rsa: +-----BEGIN OPENSSH PRIVATE KEY-----" {
		t.Errorf("): %s", got)
	}
	keys(v, "v]jc")
	if v.mode != modeDiff || !strings.Contains(v.msg, "inside one hunk") || len(m.Comments()) != 1 {
		t.Errorf("a range across files: mode %v, %q, %d comments", v.mode, v.msg, len(m.Comments()))
	}
	keys(v, string(keyEsc)+"gm")
	if !m.Viewed(model.FileRef{Commit: 0, File: v.ix.files[v.ix.order[0]].ref.File}) || at() != "banner .github/workflows/ci.yml" {
		t.Errorf("m: viewed %d, at %s", v.viewedCount(), at())
	}
	keys(v, "gJx")
	if !m.LeftOut() || !strings.Contains(v.msg, "picked file by file") {
		t.Errorf("x on a push picked by file: %q", v.msg)
	}
}
