package diffview

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/internal/viewtest"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// The index of a real push: each file's lines and counts as git's
// numstat has them, and the order risk first, the diff's order kept
// within a rank.
func TestDiffIndexOfRealPush(t *testing.T) {
	r := viewtest.MultiFilePush(t)
	ix := newDiffIndex(model.New(r), testWords)
	if len(ix.files) != len(r.Files) {
		t.Fatalf("%d files indexed, git's numstat has %d", len(ix.files), len(r.Files))
	}
	want := map[string][2]int{}
	for _, f := range r.Files {
		want[f.Path] = [2]int{f.Added, f.Deleted}
	}
	var order []string
	lines := 0
	for _, i := range ix.order {
		f := ix.files[i]
		order = append(order, f.path)
		if got := [2]int{f.added, f.dels}; got != want[f.path] {
			t.Errorf("%s: +%d -%d, git says +%d -%d", f.path, got[0], got[1], want[f.path][0], want[f.path][1])
		}
		if !strings.HasPrefix(ix.line(f.first), "diff --git ") {
			t.Errorf("%s starts at %q", f.path, ix.line(f.first))
		}
		lines += f.end - f.first
	}
	if lines != strings.Count(r.Diff, "\n") {
		t.Errorf("the files hold %d lines, the diff %d", lines, strings.Count(r.Diff, "\n"))
	}
	got := strings.Join(order, " ")
	if want := "deploy/id_rsa .github/workflows/ci.yml Makefile README.md docs/guide.md gen/big.txt notes/todo.md src/a.go"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
	sevs := map[approval.Severity]int{}
	for _, f := range ix.files {
		sevs[f.sev]++
	}
	if sevs[approval.High] != 1 || sevs[approval.Medium] != 2 {
		t.Errorf("%d high, %d medium", sevs[approval.High], sevs[approval.Medium])
	}
}

// Search goes forward and back through the files in the order shown,
// round the end, opens a collapsed file it finds a match in, and ignores
// case only for a query without capitals.
func TestDiffViewSearch(t *testing.T) {
	var diff strings.Builder
	var flags []approval.Flag
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&diff, "diff --git a/f%d b/f%d\n--- a/f%d\n+++ b/f%d\n@@ -1 +1,%d @@\n", i, i, i, i, 450)
		for j := 0; j < 450; j++ {
			if j == 100 {
				fmt.Fprintf(&diff, "+Needle %d\n", i)
			} else {
				fmt.Fprintf(&diff, "+hay %d.%d\n", i, j)
			}
		}
	}
	flags = append(flags, approval.Flag{Path: "f2", Severity: approval.High})
	v := newDiffView(newDiffIndex(model.New(&approval.Request{Diff: diff.String(), Flags: flags}), testWords), 80, 24, false)
	if v.total() != 3 {
		t.Fatalf("three collapsed files take %d rows, want 3", v.total())
	}
	found := func() string {
		if v.hitAt < 0 {
			return "none: " + v.msg
		}
		return v.ix.line(v.ix.lineAt(v.hitAt))
	}
	v.setQuery("needle")
	for _, step := range []struct {
		forward bool
		want    string
	}{
		{true, "+Needle 2"}, // f2 is shown first: high risk
		{true, "+Needle 0"},
		{true, "+Needle 1"},
		{true, "+Needle 2"}, // round the end
		{false, "+Needle 1"},
		{false, "+Needle 0"},
		{false, "+Needle 2"}, // round the start
	} {
		v.search(step.forward)
		if got := found(); got != step.want {
			t.Fatalf("search forward=%v found %q, want %q", step.forward, got, step.want)
		}
		if k, _ := v.at(v.top + 2); v.collapsed(v.ix.order[k]) {
			t.Errorf("the match's file is still collapsed")
		}
	}
	v.setQuery("NEEDLE")
	v.search(true)
	if !strings.HasPrefix(v.msg, "not found") {
		t.Errorf("a query with capitals matched another case: %q", found())
	}
}

// keyScript is a Terminal's bytes, for readViewKey.
type keyScript struct {
	Terminal
	in string
}

func (k *keyScript) ReadByte() (byte, error) {
	if k.in == "" {
		return 0, io.EOF
	}
	c := k.in[0]
	k.in = k.in[1:]
	return c, nil
}

func (k *keyScript) Buffered() int { return len(k.in) }

func TestReadViewKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []rune
	}{
		{"jk", []rune{'j', 'k'}},
		{"\x1b[A\x1b[B\x1bOC\x1b[D", []rune{keyUp, keyDown, keyRight, keyLeft}},
		{"\x1b[5~\x1b[6~\x1b[H\x1b[4~", []rune{keyPgUp, keyPgDn, keyHome, keyEnd}},
		{"\x1b", []rune{keyEsc}},
		{"\x1b[1;5Aq", []rune{keyUp, 'q'}},   // a modifier is read whole
		{"\x1b[200~x", []rune{keyNone, 'x'}}, // a sequence the view has no use for
		{"\u00e9\u6f22", []rune{'\u00e9', '\u6f22'}},
	} {
		k := &keyScript{in: tc.in}
		var got []rune
		for k.in != "" {
			r, err := readViewKey(k)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q: keys %v, want %v", tc.in, got, tc.want)
		}
	}
}

// A row never takes more than its cells: wide characters count two, a
// character cut by the edge is left out, tabs go to the next stop, and
// what is left of the screen is skipped cell by cell.
func TestCellWriter(t *testing.T) {
	for _, tc := range []struct {
		in          string
		width, skip int
		want        string
		full        bool
	}{
		{"abc", 5, 0, "abc", false},
		{"abcdef", 5, 0, "abcde", true},
		{"\u6f22\u5b57\u6f22", 5, 0, "\u6f22\u5b57", true},
		{"a\tb", 12, 0, "a       b", false},
		{"\x1b[2J", 10, 0, "^[[2J", false},
		{"x\u202ey", 20, 0, "x<U+202E>y", false},
		{"abcdef", 3, 2, "cde", true},
		{"\u6f22\u5b57x", 5, 1, " \u5b57x", false},
		{"e\u0301\u0301\u0301!", 2, 0, "e\u0301\u0301\u0301!", false},
	} {
		w := cellWriter{width: tc.width, skip: tc.skip}
		w.put(tc.in)
		if string(w.b) != tc.want || w.full != tc.full {
			t.Errorf("%q in %d cells, skip %d: %q (full %v), want %q (full %v)", tc.in, tc.width, tc.skip, w.b, w.full, tc.want, tc.full)
		}
	}
}

// testWords are the prompt's words for flags, in short.
var testWords = Words{
	Label: func(f approval.Flag) string { return f.Code },
	Marker: func(s approval.Severity) string {
		return map[approval.Severity]string{approval.High: "!!", approval.Medium: "! "}[s]
	},
}
