package gittools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/sandbox"
)

// hostileNames are names a worker may send that a terminal, or a model
// reading the answer, would take for something else.
var hostileNames = []string{
	"a\x1b[2Jb",        // clears a screen
	"line\nbreak",      // a second line
	"nul\x00byte",      // NUL
	"\u202etxt.exe",    // reverses the text after it
	"zero\u200bwidth",  // invisible
	"bad\xff\xfeutf8",  // not UTF-8
	"c1\u009bcontrol",  // a C1 control (CSI)
	"bell\adel\x7f.md", // BEL and DEL
}

// rawIn reports the first character of s no answer should carry raw: a
// control character other than newline and tab, invalid UTF-8, or an
// invisible or text-direction character.
func rawIn(s string) (string, bool) {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return "invalid UTF-8", true
		case r == '\n' || r == '\t':
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			return strings.ToUpper(string(utf8.AppendRune(nil, r))), true
		}
	}
	return "", false
}

// Every name a worker gave comes back quoted in the answer, refused or
// not: the worker sees what the name is, not what a terminal would make
// of it, as the reviewer does.
func TestAnswersQuoteHostileNames(t *testing.T) {
	repo := pyProject(t)
	s := pySession(t, repo, false)
	call(t, s, "write_file", map[string]any{"path": "ok.txt", "content": "hello\n"})
	for _, h := range hostileNames {
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"path": h}},
			{"write_file", map[string]any{"path": h, "content": "x"}},
			{"write_file", map[string]any{"path": "dir/" + h + "/f", "content": "x"}},
			{"edit_file", map[string]any{"path": h, "old_text": "a", "new_text": "b"}},
			{"edit_file", map[string]any{"path": "ok.txt", "old_text": h, "new_text": "b"}},
			{"delete_file", map[string]any{"path": h}},
			{"move_file", map[string]any{"source": h, "destination": "b"}},
			{"move_file", map[string]any{"source": "ok.txt", "destination": h}},
			{"list_files", map[string]any{"path": h}},
			{"list_files", map[string]any{"pattern": h}},
			{"search_files", map[string]any{"pattern": "x", "path": h}},
			{"search_files", map[string]any{"pattern": "x", "glob": h}},
			{"search_files", map[string]any{"pattern": h + "("}},
			{"git_status", map[string]any{"repo": h}},
			{"git_stage", map[string]any{"files": []string{h}, "message": "m"}},
			{"git_stage", map[string]any{"repo": h, "message": "m"}},
			{"git_diff", map[string]any{"commit_id": h}},
			{"git_diff", map[string]any{"path": h}},
			{"git_push", map[string]any{"target": h}},
			{"git_push", map[string]any{"commit_id": h}},
			{"git_discard", map[string]any{"commit_id": h}},
			{"git_pull", map[string]any{"source": h}},
			{"git_pull", map[string]any{"paths": []string{h}}},
			{"git_pull", map[string]any{"destination": h}},
			{"rollback", map[string]any{"name": h}},
			{"checkpoint", map[string]any{"name": h}},
			{"run_output", map[string]any{"id": h}},
		} {
			raw, _ := json.Marshal(tc.args)
			out, err := gittools.Call(context.Background(), s, tc.tool, raw, nil)
			if err != nil {
				out = err.Error()
			}
			if what, bad := rawIn(out); bad {
				t.Errorf("%s %q: the answer carries %s raw: %q", tc.tool, tc.args, what, out)
			}
		}
	}
}

// Names a repository or a run made, which the sandbox refuses, are listed
// quoted in the answer: before, they came back raw, escape sequences and
// all.
func TestRefusedNamesAreQuoted(t *testing.T) {
	repo := pyProject(t)
	hostile := []string{"evil\x1b[2J.txt", "two\nlines.txt", "\u202egnp.exe", "bell\a.md"}
	for _, n := range hostile {
		if err := os.WriteFile(filepath.Join(repo, n), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "hostile names")
	s := pySession(t, repo, sandbox.Available() == nil)
	check := func(what, out string) {
		t.Helper()
		if bad, ok := rawIn(out); ok {
			t.Errorf("%s carries %s raw: %q", what, bad, out)
		}
	}
	for _, args := range []map[string]any{nil, {"destination": "copy"}} {
		raw, _ := json.Marshal(args)
		out, err := gittools.Call(context.Background(), s, "git_pull", raw, nil)
		if err != nil {
			out = err.Error()
		}
		check("git_pull", out)
		if args != nil && !strings.Contains(out, `"evil\x1b[2J.txt"`) {
			t.Errorf("git_pull %v does not name the refused file as it is: %q", args, out)
		}
	}
	if sandbox.Available() != nil {
		t.Log("no sandbox here: the run's refusals are not tried")
		return
	}
	out := call(t, s, "run", map[string]any{"command": `for n in "$(printf 'r\033[2Jun.txt')" "$(printf 'a\nb')"; do echo x > "$n"; done`})
	check("run", out)
	if !strings.Contains(out, `"r\x1b[2Jun.txt"`) {
		t.Errorf("the run's answer does not name the refused file as it is: %q", out)
	}
}
