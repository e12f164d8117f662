package review_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hinshun/vt10x"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
)

// accepted names hunk i of file f of commit c of r, as a selection does.
func accepted(r *approval.Request, c, f, i int, lines ...int) approval.AcceptedHunk {
	return approval.AcceptedHunk{Index: i, ID: approval.HunkID(r.Commits[c].Files[f].Hunks[i]), Lines: lines}
}

// TestPickHunks: the reviewer walks a real two-commit push hunk by hunk,
// as git add -p does, and the decision names exactly what was accepted of
// each commit, by content id, with the lines of a split hunk and an edited
// message.
func TestPickHunks(t *testing.T) {
	r := hunkRequest(t)
	c1, c2 := r.Commits[0].ID, r.Commits[1].ID
	pick := func(accept ...approval.Accepted) approval.Decision {
		return approval.Decision{Request: r.ID, Verdict: approval.Pick, Accept: accept, By: "reviewer"}
	}
	cases := []struct {
		name   string
		keys   string
		lines  []string
		want   approval.Decision
		output []string
	}{
		{name: "hunks, lines and a message", keys: "py" + "s" + "yny" + "ek" + "n" + "y" + "d" + "y", lines: []string{"Add the limits, reviewed", "yes"},
			want: pick(
				approval.Accepted{Commit: c1, Message: "Add the limits, reviewed\n\nWith a body.\n", Files: []approval.AcceptedFile{
					{Path: "a.go", Hunks: []approval.AcceptedHunk{accepted(r, 0, 0, 0), accepted(r, 0, 0, 1, 0, 2)}}}},
				approval.Accepted{Commit: c2, Files: []approval.AcceptedFile{{Path: "README.md", Hunks: []approval.AcceptedHunk{accepted(r, 1, 0, 0)}}}}),
			output: []string{"Commit 1 of 2", "(2/2) Accept this hunk of a.go", "line 3/3: accept", "Its body, kept unless you say otherwise:\n    | With a body.", "This commit lands as:\n    Add the limits, reviewed\n    \n    With a body.",
				"lands as commit 1, with your message \"Add the limits, reviewed\" (was \"Add the limits^[[1A^[[2K<U+202E>\"), its body kept (1 line)", "a.go: 2 of 2 hunks, 1 of them in part (some lines)",
				"Stays in the sandbox, not pushed:", "a.go (commit " + r.Commits[0].ID.String()[:7] + "): the lines left out of 1 hunk",
				"notes^[[2J<U+202E>txt.sh^Jfake (commit", "a.go (commit " + r.Commits[1].ID.String()[:7] + "): all 1 hunk", "Push 2 commits?"}},
		{name: "rest of the file", keys: "pa" + "y" + "d" + "a" + "y", lines: []string{"yes"},
			want: pick(
				approval.Accepted{Commit: c1, Files: []approval.AcceptedFile{
					{Path: "a.go", Hunks: []approval.AcceptedHunk{accepted(r, 0, 0, 0), accepted(r, 0, 0, 1)}},
					{Path: hostileName, Hunks: []approval.AcceptedHunk{accepted(r, 0, 1, 0)}}}},
				approval.Accepted{Commit: c2, Files: []approval.AcceptedFile{{Path: "a.go", Hunks: []approval.AcceptedHunk{accepted(r, 1, 1, 0)}}}}),
			output: []string{"README.md (commit " + r.Commits[1].ID.String()[:7] + "): all 1 hunk"}},
		{name: "a commit left out", keys: "pnnn" + "yy" + "y", lines: []string{"yes"},
			want: pick(approval.Accepted{Commit: c2, Files: []approval.AcceptedFile{
				{Path: "README.md", Hunks: []approval.AcceptedHunk{accepted(r, 1, 0, 0)}},
				{Path: "a.go", Hunks: []approval.AcceptedHunk{accepted(r, 1, 1, 0)}}}}),
			output: []string{`left out, nothing of it lands`, "lands as commit 1, with its message \"Document the limits\"", "Push 1 commit?"}},
		{name: "every line of a split hunk is the hunk", keys: "pn" + "syyy" + "nnny", lines: []string{"yes"},
			want: pick(approval.Accepted{Commit: c1, Files: []approval.AcceptedFile{
				{Path: "a.go", Hunks: []approval.AcceptedHunk{accepted(r, 0, 0, 1)}}}})},
		{name: "split, back to the hunk, then no", keys: "p" + "syq" + "n" + "y" + "nnn" + "y", lines: []string{"yes"},
			want: pick(approval.Accepted{Commit: c1, Files: []approval.AcceptedFile{
				{Path: "a.go", Hunks: []approval.AcceptedHunk{accepted(r, 0, 0, 1)}}}})},
		{name: "q stops picking, nothing decided", keys: "pyq" + "r", lines: []string{""},
			want:   approval.Decision{Request: r.ID, Verdict: approval.Reject, By: "reviewer"},
			output: []string{"Nothing picked."}},
		{name: "nothing accepted", keys: "pnnnnn" + "r", lines: []string{""},
			want:   approval.Decision{Request: r.ID, Verdict: approval.Reject, By: "reviewer"},
			output: []string{"You accepted nothing"}},
		{name: "the summary refused", keys: "pyyyyy" + "n" + "r", lines: []string{""},
			want:   approval.Decision{Request: r.ID, Verdict: approval.Reject, By: "reviewer"},
			output: []string{"Nothing stays in the sandbox: every hunk lands.", "Push 2 commits?"}},
		{name: "help and unknown keys", keys: "p?zq" + "?r", lines: []string{""},
			want:   approval.Decision{Request: r.ID, Verdict: approval.Reject, By: "reviewer"},
			output: []string{"s  split it: accept or leave out each changed line", "Unknown key 'z'", "pick hunks, file by file, as git add -p does, the flagged files first"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &approvaltest.Script{Keys: []rune(c.keys), Lines: c.lines, TTY: true}
			got, err := review.Prompt(s, r)
			if err != nil {
				t.Fatalf("%v\noutput:\n%s", err, s.Out.String())
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("decision\n%+v\nwant\n%+v\noutput:\n%s", got, c.want, s.Out.String())
			}
			// What the prompt sends passes the gate's own check.
			if got.Accept != nil {
				if err := approval.CheckAccept(r, got.Accept); err != nil {
					t.Errorf("the gate would refuse the selection: %v", err)
				}
			}
			for _, o := range c.output {
				if !strings.Contains(s.Out.String(), o) {
					t.Errorf("the reviewer did not see %q:\n%s", o, s.Out.String())
				}
			}
			if len(s.Keys) != 0 {
				t.Errorf("keys left unread: %q", string(s.Keys))
			}
		})
	}
}

// tallScreen plays out into a terminal emulator of 80 columns and rows
// lines and returns what a person would see.
func tallScreen(t *testing.T, out string, rows int) string {
	t.Helper()
	vt := vt10x.New(vt10x.WithSize(80, rows))
	if _, err := vt.Write([]byte(strings.ReplaceAll(out, "\n", "\r\n"))); err != nil {
		t.Fatal(err)
	}
	return vt.String()
}

// checkGolden compares got with the golden file name, rewriting it with
// -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("the screen differs from %s:\n%s", golden, got)
	}
}

// TestPickHunksScreenGolden: the whole walk as a person sees it, a hostile
// file name, commit message and content shown escaped, only airlock's own
// colours written.
func TestPickHunksScreenGolden(t *testing.T) {
	r := hunkRequest(t)
	for _, color := range []bool{false, true} {
		s := &echoScript{approvaltest.Script{Keys: []rune("py" + "s" + "yny" + "ek" + "n" + "y" + "d" + "y"), Lines: []string{"Add the limits, reviewed", "yes"}, TTY: true, ColorOn: color}}
		if _, err := review.Prompt(s, r); err != nil {
			t.Fatal(err)
		}
		assertOnlyOwnEscapes(t, s.Out.String())
		if !color {
			checkGolden(t, "pick.golden", tallScreen(t, s.Out.String(), 110))
		}
	}
}

// echoScript is a script terminal that echoes each key read, as the TTY
// does, so that its transcript reads as the terminal's.
type echoScript struct{ approvaltest.Script }

func (s *echoScript) ReadKey() (rune, error) {
	k, err := s.Script.ReadKey()
	if err == nil {
		s.Out.WriteString(string(k) + "\n")
	}
	return k, err
}

// Issue 32: editing a message in the picker dropped its body silently.
// The picker asks for the subject, shows the body that will be kept, and
// keeps, replaces or drops it as the reviewer says; what lands is what
// the screen said last.
func TestEditMessageKeepsOrReplacesTheBody(t *testing.T) {
	r := hunkRequest(t)
	subj := r.Commits[0].Message[:strings.Index(r.Commits[0].Message, "\n")]
	for _, c := range []struct {
		name, keys string
		lines      []string
		want       string
		shown      string
	}{
		{"new subject, body kept", "pe" + "k" + "yyyyy" + "y", []string{"Tighter limits", "yes"},
			"Tighter limits\n\nWith a body.\n", "This commit lands as:\n    Tighter limits\n    \n    With a body.\n"},
		{"Enter keeps the body", "pe" + "\r" + "yyyyy" + "y", []string{"Tighter limits", "yes"},
			"Tighter limits\n\nWith a body.\n", "its body kept (1 line)"},
		{"body replaced", "pe" + "r" + "yyyyy" + "y", []string{"", "First line", "second line", "", "yes"},
			subj + "\n\nFirst line\nsecond line\n", "your body (2 lines)"},
		{"body dropped", "pe" + "d" + "yyyyy" + "y", []string{"Tighter limits", "yes"},
			"Tighter limits\n", "its body dropped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &approvaltest.Script{Keys: []rune(c.keys), Lines: c.lines, TTY: true}
			got, err := review.Prompt(s, r)
			if err != nil {
				t.Fatalf("%v\noutput:\n%s", err, s.Out.String())
			}
			if len(got.Accept) == 0 || got.Accept[0].Message != c.want {
				t.Fatalf("the message that lands: %+v; want %q\noutput:\n%s", got.Accept, c.want, s.Out.String())
			}
			if !strings.Contains(s.Out.String(), "Its body, kept unless you say otherwise:\n    | With a body.") || !strings.Contains(s.Out.String(), c.shown) {
				t.Errorf("the screen did not show the body kept and %q:\n%s", c.shown, s.Out.String())
			}
			if err := approval.CheckAccept(r, got.Accept); err != nil {
				t.Errorf("the gate would refuse the selection: %v", err)
			}
			assertOnlyOwnEscapes(t, s.Out.String())
		})
	}
}
