package memfs_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/pathguard/pathguardtest"
)

// Every corpus path is refused, through every worker operation, with the
// rule the corpus names, and nothing in the workspace changes.
func TestCorpusRefusedWithRule(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "ok.txt", "fine")
	ops := map[string]func(p string) error{
		"write":   func(p string) error { return w.WriteFile(p, []byte("x"), 0o644) },
		"read":    func(p string) error { _, err := w.ReadFile(p); return err },
		"stat":    func(p string) error { _, err := w.Lstat(p); return err },
		"list":    func(p string) error { _, err := w.ReadDir(p); return err },
		"mkdir":   func(p string) error { return w.MkdirAll(p, 0o755) },
		"remove":  func(p string) error { return w.RemoveAll(p) },
		"rename":  func(p string) error { return w.Rename("ok.txt", p) },
		"symlink": func(p string) error { return w.Symlink("ok.txt", p) },
		"edit":    func(p string) error { return w.Edit(p, func(b []byte) ([]byte, error) { return b, nil }) },
		"open":    func(p string) error { _, err := w.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644); return err },
	}
	for _, c := range pathguardtest.Rules(t) {
		for name, op := range ops {
			dirOp := name == "list" || name == "stat" || name == "mkdir"
			if dirOp && (c.Path == "." || strings.HasSuffix(c.Path, "/") && !strings.HasSuffix(c.Path, "//")) {
				continue // where a directory is meant, "." is the root and "a/" is "a"
			}
			err := op(c.Path)
			if got := pathguard.RuleOf(err); got != c.Rule {
				t.Errorf("%s %q: rule %q, want %q (err: %v)", name, c.Path, got, c.Rule, err)
				continue
			}
			if !strings.Contains(err.Error(), string(c.Rule)) {
				t.Errorf("%s %q: message does not name the rule: %v", name, c.Path, err)
			}
		}
	}
	if ch := w.Changes(); len(ch) != 1 || ch[0].Path != "ok.txt" {
		t.Errorf("refused operations changed the workspace: %+v", ch)
	}
	if got, err := w.ReadFile("ok.txt"); err != nil || string(got) != "fine" {
		t.Errorf("ok.txt = %q, %v", got, err)
	}
}

// The sentinel says which kind of refusal it was.
func TestGuardSentinels(t *testing.T) {
	cases := []struct {
		path string
		want error
	}{
		{"../x", pathguard.ErrOutsideSandbox},
		{"/etc/passwd", pathguard.ErrOutsideSandbox},
		{"C:/x", pathguard.ErrOutsideSandbox},
		{".git/config", pathguard.ErrDenied},
		{".env", pathguard.ErrDenied},
		{"a//b", pathguard.ErrInvalidPath},
		{"CON", pathguard.ErrInvalidPath},
		{"\xff.txt", pathguard.ErrInvalidPath},
	}
	w := newWorkspace(t)
	for _, c := range cases {
		err := w.WriteFile(c.path, nil, 0)
		if !errors.Is(err, c.want) {
			t.Errorf("%q: %v, want %v", c.path, err, c.want)
		}
	}
	if pathguard.RuleOf(w.WriteFile("\xff.txt", nil, 0)) != pathguard.RuleInvalidUTF8 {
		t.Error("invalid UTF-8 not refused by its rule")
	}
}

// Error messages tell a worker what to do instead.
func TestGuardMessagesSuggest(t *testing.T) {
	cases := map[string]string{
		"/src/main.go":    `"src/main.go"`,
		`src\main.go`:     `"src/main.go"`,
		"../x":            "from the workspace root",
		".git/config":     "git_stage",
		"nul.txt":         "choose another name",
		"a//b":            "single slashes",
		"x\u202egpj.exe":  "U+202E",
		".env":            `deny pattern ".env"`,
		"":                `e.g. "README.md"`,
		"a\x1bb":          "U+001B",
		"./notes.md":      `without "./"`,
		"C:/Windows/x.md": "relative to the workspace root",
	}
	w := newWorkspace(t)
	for p, want := range cases {
		err := w.WriteFile(p, nil, 0)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want it to mention %s", p, err, want)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\x00\x1b\n\r") {
			t.Errorf("%q: message carries control characters: %q", p, err)
		}
	}
}
