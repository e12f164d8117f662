package linediff

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Helpers that run the real git as the reference implementation. git runs
// with no system or global configuration, in a directory outside any
// repository, with the relevant defaults spelled out, so that the user's
// settings cannot change its output.

func needGit(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	return p
}

func gitEnv() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"LC_ALL=C",
	)
}

// runGit runs git in dir; exit status 1 is not an error when okOne is set
// (git diff reports differences that way).
func runGit(t testing.TB, dir string, okOne bool, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(needGit(t), args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(okOne && errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// gitDiffArgs are git's defaults, spelled out.
var gitDiffArgs = []string{"diff", "--no-index", "--no-ext-diff", "--no-textconv",
	"--diff-algorithm=myers", "--indent-heuristic"}

// writePair writes a and b as files "a" and "b" in a new directory.
func writePair(t testing.TB, dir string, a, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "a"), a, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitHunks returns git's diff of a and b without the header lines (all
// lines up to and including the "+++ " one).
func gitHunks(t testing.TB, dir string, a, b []byte, color bool) []byte {
	t.Helper()
	writePair(t, dir, a, b)
	args := append([]string(nil), gitDiffArgs...)
	if color {
		args = append(args, "--color=always")
	} else {
		args = append(args, "--no-color")
	}
	out := runGit(t, dir, true, append(args, "a", "b")...)
	return stripHeader(out)
}

func stripHeader(out []byte) []byte {
	for len(out) > 0 {
		i := bytes.IndexByte(out, '\n')
		if i < 0 {
			return nil
		}
		line := out[:i]
		out = out[i+1:]
		if bytes.HasPrefix(line, []byte("+++ ")) || bytes.HasPrefix(line, []byte("\x1b[1m+++ ")) {
			return out
		}
	}
	return nil
}

// gitNumstat returns git's line counts for a and b.
func gitNumstat(t testing.TB, dir string, a, b []byte) Stats {
	t.Helper()
	writePair(t, dir, a, b)
	out := runGit(t, dir, true, append(append([]string(nil), gitDiffArgs...), "--numstat", "a", "b")...)
	if len(out) == 0 {
		return Stats{}
	}
	f := strings.Split(string(out), "\t")
	if len(f) < 3 {
		t.Fatalf("numstat output %q", out)
	}
	add, err1 := strconv.Atoi(f[0])
	del, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("numstat output %q", out)
	}
	return Stats{Added: add, Deleted: del}
}
