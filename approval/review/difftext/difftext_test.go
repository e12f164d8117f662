package difftext

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/gittest"
)

// gitDiffs writes old to f, stages it, writes nu, and returns git diff
// with the extra arguments, one run per set.
func gitDiffs(t *testing.T, repo, old, nu string, sets ...[]string) []string {
	t.Helper()
	p := filepath.Join(repo, "f.txt")
	if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "add", "f.txt")
	if err := os.WriteFile(p, []byte(nu), 0o644); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, args := range sets {
		out = append(out, gittest.Git(t, repo, append([]string{"diff", "--no-color"}, append(args, "--", "f.txt")...)...))
	}
	return out
}

func hunksOf(diff string) string {
	if i := strings.Index(diff, "\n@@ "); i >= 0 {
		return diff[i+1:]
	}
	return ""
}

func newRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	gittest.Git(t, repo, "init", "-q")
	return repo
}

func numbered(n int, tag string) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("%s line %d", tag, i))
	}
	return out
}

// Issue 33: an LF -> CRLF file showed 41 of 41 lines changed with its one
// real edit buried. Shown, it is one line "line endings: LF -> CRLF" and
// the real edit's hunk, as git diff --ignore-cr-at-eol prints it (without
// a CR on every line); and back, CRLF -> LF.
func TestLineEndingsAsOneLine(t *testing.T) {
	repo := newRepo(t)
	lines := numbered(41, "t")
	lf := strings.Join(lines, "\n") + "\n"
	edited := append([]string(nil), lines...)
	edited[19] = "the one real edit"
	crlf := strings.Join(edited, "\r\n") + "\r\n"
	for _, c := range []struct {
		name, old, nu, words string
	}{
		{"LF to CRLF", lf, crlf, "LF -> CRLF"},
		{"CRLF to LF", crlf, lf, "CRLF -> LF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := gitDiffs(t, repo, c.old, c.nu, nil, []string{"--ignore-cr-at-eol"})
			raw, want := d[0], d[1]
			if n := strings.Count(raw, "\n-"); n < 41 {
				t.Fatalf("git's own diff has %d removed lines: the test's file is not what it says", n)
			}
			got := Show(raw, Mode{})
			header := raw[:strings.Index(raw, "@@ ")]
			// git's hunks, their CRs dropped: the one line says them.
			if exp := header + "line endings: " + c.words + "\n" + strings.ReplaceAll(hunksOf(want), "\r\n", "\n"); got != exp {
				t.Fatalf("shown:\n%q\nwant:\n%q", got, exp)
			}
			_, hunks := split(raw)
			if w := LineEndings(hunks); w != c.words {
				t.Errorf("LineEndings = %q, want %q", w, c.words)
			}
		})
	}
}

// With whitespace ignored (w), lines that differ only in spaces, tabs or
// CR are context, as git diff -w shows them; a file changed only in
// whitespace says so; shown with whitespace, a diff without CR is the
// same text.
func TestIgnoreWhitespaceAsGit(t *testing.T) {
	repo := newRepo(t)
	r := rand.New(rand.NewSource(33))
	checked := 0
	for trial := 0; trial < 40; trial++ {
		old := numbered(10+r.Intn(50), fmt.Sprintf("t%d", trial))
		nu := append([]string(nil), old...)
		for e := 1 + r.Intn(6); e > 0; e-- {
			i := r.Intn(len(nu))
			switch r.Intn(5) {
			case 0:
				nu[i] = "  " + nu[i]
			case 1:
				nu[i] = strings.Replace(nu[i], " ", "\t ", 1)
			case 2:
				nu[i] += "\r"
			case 3:
				nu[i] = fmt.Sprintf("t%d changed %d", trial, e)
			default:
				nu = append(nu[:i], append([]string{fmt.Sprintf("t%d added %d", trial, e)}, nu[i:]...)...)
			}
		}
		a, b := strings.Join(old, "\n")+"\n", strings.Join(nu, "\n")+"\n"
		if a == b {
			continue
		}
		d := gitDiffs(t, repo, a, b, nil, []string{"-w"})
		raw, want := d[0], d[1]
		if !strings.Contains(raw, "\r") {
			if got := Show(raw, Mode{}); got != raw {
				t.Fatalf("trial %d: shown with whitespace, the diff changed:\n%s", trial, got)
			}
		}
		got := Show(raw, Mode{IgnoreSpace: true})
		// CRs aside: where line endings changed, a line says so instead.
		if noCR(hunksOf(got)) != noCR(hunksOf(want)) {
			t.Fatalf("trial %d: hunks with whitespace ignored:\n%s\ngit diff -w:\n%s\nfrom:\n%s", trial, got, want, raw)
		}
		if hunksOf(want) == "" && !strings.Contains(got, "no other change\n") {
			t.Fatalf("trial %d: a change of whitespace alone does not say so:\n%s", trial, got)
		}
		checked++
	}
	if checked < 30 {
		t.Fatalf("only %d trials checked", checked)
	}
}

func noCR(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// Several files: only the one whose line endings changed is rewritten.
func TestShowLeavesOtherFilesAlone(t *testing.T) {
	a := "diff --git a/a b/a\nindex 1..2 100644\n--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n-x\n+y\n z\n"
	c := "diff --git a/c b/c\nindex 1..2 100644\n--- a/c\n+++ b/c\n@@ -1,2 +1,2 @@\n-p\n-q\n+p\r\n+q\r\n"
	got := Show(a+c, Mode{})
	want := a + "diff --git a/c b/c\nindex 1..2 100644\n--- a/c\n+++ b/c\nline endings: LF -> CRLF\nno other change\n"
	if got != want {
		t.Fatalf("got:\n%q\nwant:\n%q", got, want)
	}
}
