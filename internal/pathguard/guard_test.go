package pathguard_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/pathguard/pathguardtest"
)

// Every path of the shared corpus has an expected rule in ours.
func TestCorpusCoversSharedCorpus(t *testing.T) {
	have := map[string]bool{}
	for _, c := range pathguardtest.Rules(t) {
		have[c.Path] = true
	}
	for _, p := range pathguardtest.Corpus(t) {
		if !have[p] {
			t.Errorf("shared corpus path %q has no expected rule in hostile-paths-rules.jsonl", p)
		}
	}
}

func TestGuardAccepts(t *testing.T) {
	for _, p := range []string{
		"README.md", "a/b/c/d.txt", ".gitignore", ".github/workflows/ci.yml", ".gitmodules",
		"git", ".gitx", "x.git", "git~", "git~a", ".git-blame-ignore-revs", "caf\u00e9/na\u00efve.md",
		"\u65e5\u672c\u8a9e/\u30d5\u30a1\u30a4\u30eb.txt", "with space.txt", "dir/C:", "console.log",
		"com10", "lpt", "nul-safe.txt", "...", "a..b", "emoji-\U0001F600.txt", "tab-less", "x/.envrc.example", "ab:c",
		".environment", "env/.envoy", "keys/public.txt", strings.Repeat("n", 255), "cone",
	} {
		comps, err := pathguard.CheckPath(p)
		if err != nil {
			t.Errorf("CheckPath(%q): %v", p, err)
			continue
		}
		if strings.Join(comps, "/") != p {
			t.Errorf("CheckPath(%q) = %q", p, comps)
		}
	}
}

// git is the oracle: every path git itself refuses (with its NTFS and HFS+
// protections on) the guard refuses too, and every path the guard accepts
// git accepts.
func TestGuardAgreesWithGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	run := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("", "init", "-q", "."); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	blob, err := run("", "hash-object", "-w", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	blob = strings.TrimSpace(blob)
	gitAccepts := func(p string) bool {
		idx := filepath.Join(dir, ".git", "oracle-index")
		os.Remove(idx)
		cmd := exec.Command(gitBin, "-c", "core.protectNTFS=true", "-c", "core.protectHFS=true",
			"update-index", "--add", "-z", "--index-info")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+idx, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		cmd.Stdin = strings.NewReader("100644 " + blob + "\t" + p + "\x00")
		if err := cmd.Run(); err != nil {
			return false
		}
		ls := exec.Command(gitBin, "ls-files", "-z")
		ls.Dir = dir
		ls.Env = append(os.Environ(), "GIT_INDEX_FILE="+idx)
		listed, err := ls.Output()
		return err == nil && len(listed) > 0
	}
	var paths []string
	for _, c := range pathguardtest.Rules(t) {
		if !strings.ContainsRune(c.Path, 0) { // git's -z input cannot carry NUL
			paths = append(paths, c.Path)
		}
	}
	accepted := []string{"README.md", "a/b/c.txt", ".gitignore", "caf\u00e9.md", "ab:c", "...", "x.git", "git~a", "emoji-\U0001F600"}
	for _, p := range append(paths, accepted...) {
		_, guardErr := pathguard.CheckPath(p)
		git := gitAccepts(p)
		if !git && guardErr == nil {
			t.Errorf("git refuses %q but the guard accepts it", p)
		}
		if guardErr == nil && !git {
			t.Errorf("the guard accepts %q, which git refuses", p)
		}
	}
	for _, p := range accepted {
		if !gitAccepts(p) {
			t.Errorf("git refuses %q, a path the guard accepts", p)
		}
	}
}

// FuzzCheckPath checks what the guard promises for any input it accepts.
func FuzzCheckPath(f *testing.F) {
	for _, p := range pathguardtest.Corpus(f) {
		f.Add(p)
	}
	for _, c := range pathguardtest.Rules(f) {
		f.Add(c.Path)
	}
	for _, p := range []string{"a/b", "README.md", "src/x.go", "\u00e9", "ab:c", ".gitx"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		comps, err := pathguard.CheckPath(p)
		if err != nil {
			var e *pathguard.Error
			if !errors.As(err, &e) || e.Rule == "" {
				t.Fatalf("refusal of %q names no rule: %v", p, err)
			}
			if strings.ContainsAny(err.Error(), "\x00\n\r\x1b") {
				t.Fatalf("message for %q carries control characters: %q", p, err)
			}
			return
		}
		if !utf8.ValidString(p) || len(p) == 0 || len(p) > pathguard.MaxPathBytes {
			t.Fatalf("accepted %q", p)
		}
		if strings.HasPrefix(p, "/") || strings.Contains(p, `\`) {
			t.Fatalf("accepted %q", p)
		}
		if len(p) >= 2 && p[1] == ':' && unicode.IsLetter(rune(p[0])) {
			t.Fatalf("accepted drive path %q", p)
		}
		for _, r := range p {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029 {
				t.Fatalf("accepted %q with U+%04X", p, r)
			}
		}
		if strings.Join(comps, "/") != p {
			t.Fatalf("CheckPath(%q) = %q: not the path itself", p, comps)
		}
		for _, c := range comps {
			if c == "" || c == "." || c == ".." || len(c) > pathguard.MaxNameBytes {
				t.Fatalf("accepted %q with component %q", p, c)
			}
			if looksLikeGitDir(c) {
				t.Fatalf("accepted %q: component %q reads as .git", p, c)
			}
			if looksReserved(c) {
				t.Fatalf("accepted %q: component %q is a Windows device", p, c)
			}
		}
		again, err := pathguard.CheckPath(strings.Join(comps, "/"))
		if err != nil || strings.Join(again, "/") != p {
			t.Fatalf("not idempotent on %q: %q, %v", p, again, err)
		}
	})
}

// looksLikeGitDir is an independent statement of the .git rules: drop
// format characters and variation selectors, fold case rune by rune, drop an
// NTFS stream and trailing dots and spaces.
func looksLikeGitDir(c string) bool {
	var b strings.Builder
	for _, r := range c {
		if unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) {
			continue
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < r {
				r = f
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	s := b.String()
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, ". ")
	if s == ".git" {
		return true
	}
	rest, ok := strings.CutPrefix(s, "git~")
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

func looksReserved(c string) bool {
	base, _, _ := strings.Cut(c, ".")
	base, _, _ = strings.Cut(base, ":")
	base = strings.ToUpper(strings.TrimRight(base, " "))
	switch base {
	case "CON", "PRN", "AUX", "NUL":
		return true
	}
	return len(base) == 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) && base[3] >= '0' && base[3] <= '9'
}
