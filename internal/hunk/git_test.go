package hunk

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/gittest"
)

// randomEdit returns a file and an edit of it: lines removed, added and
// replaced at random places, the last newline sometimes missing on either
// side. Lines are unique, as in most source files, so that where a hunk
// belongs is never ambiguous (git apply starts its search elsewhere than
// Apply when hunks before were left out; both find a unique match).
func randomEdit(r *rand.Rand, trial int) (old, nu string) {
	n := 5 + r.Intn(60)
	var a []string
	for i := 0; i < n; i++ {
		a = append(a, fmt.Sprintf("t%d line %d", trial, i))
	}
	b := append([]string(nil), a...)
	for e := 1 + r.Intn(6); e > 0; e-- {
		i := r.Intn(len(b) + 1)
		switch r.Intn(3) {
		case 0:
			if i < len(b) {
				b = append(b[:i], b[i+1:]...)
			}
		case 1:
			b = append(b[:i], append([]string{fmt.Sprintf("t%d added %d", trial, e)}, b[i:]...)...)
		default:
			if i < len(b) {
				b[i] = fmt.Sprintf("t%d changed %d", trial, e)
			}
		}
	}
	join := func(lines []string) string {
		s := strings.Join(lines, "\n")
		if s != "" && r.Intn(4) != 0 {
			s += "\n"
		}
		return s
	}
	return join(a), join(b)
}

// gitApply applies patch to old in the index of repo as git apply --cached
// does, and returns the result, or ok false when git refuses it.
func gitApply(t *testing.T, repo, old, patch string) (string, bool) {
	t.Helper()
	id := strings.TrimSpace(gittest.Run(t, gittest.Env(), repo, []byte(old), "hash-object", "-w", "--stdin"))
	gittest.Git(t, repo, "update-index", "--add", "--cacheinfo", "100644,"+id+",f")
	cmd := exec.Command("git", "apply", "--cached", "-")
	cmd.Dir, cmd.Env, cmd.Stdin = repo, gittest.Env(), strings.NewReader(patch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if _, exit := err.(*exec.ExitError); !exit || !strings.Contains(stderr.String(), "patch does not apply") {
			t.Fatalf("git apply: %v: %s\npatch:\n%s", err, stderr.String(), patch)
		}
		return "", false
	}
	return gittest.Git(t, repo, "cat-file", "blob", ":f"), true
}

// TestAgainstGitApply checks Split, Select and Apply on git's own diffs
// of random edits: all hunks make the new file; any subset of them, each
// possibly cut to some of its lines, gives what git apply --cached gives
// (and git accepts every hunk Select makes).
func TestAgainstGitApply(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	gittest.Git(t, repo, "init", "-q")
	r := rand.New(rand.NewSource(24))
	trials, subsets := 0, 0
	for trial := 0; trial < 60; trial++ {
		old, nu := randomEdit(r, trial)
		if old == nu {
			continue
		}
		if err := os.WriteFile(filepath.Join(repo, "f"), []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Git(t, repo, "add", "f")
		if err := os.WriteFile(filepath.Join(repo, "f"), []byte(nu), 0o644); err != nil {
			t.Fatal(err)
		}
		diff := gittest.Git(t, repo, "diff", "f")
		header, hunks, err := Split(diff)
		if err != nil {
			t.Fatalf("trial %d: Split: %v\n%s", trial, err, diff)
		}
		if header+strings.Join(hunks, "") != diff {
			t.Fatalf("trial %d: header and hunks do not make the diff again", trial)
		}
		got, err := Apply([]byte(old), hunks)
		if err != nil || string(got) != nu {
			t.Fatalf("trial %d: Apply of every hunk = %q, %v; want %q\n%s", trial, got, err, nu, diff)
		}
		trials++
		for s := 0; s < 4; s++ {
			var pick []string
			for _, h := range hunks {
				if r.Intn(2) == 0 {
					continue
				}
				if ch, _ := Changed(h); len(ch) > 1 && r.Intn(2) == 0 {
					var lines []int
					for i := range ch {
						if r.Intn(2) == 0 {
							lines = append(lines, i)
						}
					}
					if len(lines) == 0 {
						lines = []int{r.Intn(len(ch))}
					}
					if h, err = Select(h, lines); err != nil {
						t.Fatalf("trial %d: Select(%v): %v", trial, lines, err)
					}
				}
				pick = append(pick, h)
			}
			if len(pick) == 0 {
				continue
			}
			patch := header + strings.Join(pick, "")
			want, ok := gitApply(t, repo, old, patch)
			got, err := Apply([]byte(old), pick)
			switch {
			case !ok && err == nil:
				t.Fatalf("trial %d: git apply refused what Apply applied:\n%s", trial, patch)
			case ok && (err != nil || string(got) != want):
				t.Fatalf("trial %d: Apply = %q, %v; git apply gives %q\n%s", trial, got, err, want, patch)
			}
			subsets++
		}
	}
	t.Logf("%d diffs, %d subsets checked against git apply", trials, subsets)
	if trials < 40 || subsets < 80 {
		t.Fatalf("only %d diffs and %d subsets: the generator makes too few", trials, subsets)
	}
}
