package linediff

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pair is one diff case.
type pair struct {
	name string
	a, b []byte
}

// gitBatch runs git once over many pairs (git diff --no-index on two
// directories) and returns, per pair, git's hunks and numstat.
type gitResult struct {
	hunks []byte
	stats Stats
}

func gitBatch(t testing.TB, pairs []pair, color bool) []gitResult {
	return gitBatchContext(t, pairs, color, 0)
}

// gitBatchContext is gitBatch with git diff -U<context> (0: default).
func gitBatchContext(t testing.TB, pairs []pair, color bool, context int) []gitResult {
	t.Helper()
	dir := t.TempDir()
	da, db := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	for _, d := range []string{da, db} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	names := make(map[string]int, len(pairs))
	for i, p := range pairs {
		n := fmt.Sprintf("f%05d", i)
		names[n] = i
		if err := os.WriteFile(filepath.Join(da, n), p.a, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(db, n), p.b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string(nil), gitDiffArgs...)
	res := make([]gitResult, len(pairs))

	out := runGit(t, dir, true, append(args, "--numstat", "A", "B")...)
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("numstat line %q", line)
		}
		n := f[2][strings.LastIndexByte(f[2], '/')+1:]
		i, ok := names[n]
		if !ok {
			t.Fatalf("numstat line %q", line)
		}
		add, err1 := strconv.Atoi(f[0])
		del, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("numstat line %q", line)
		}
		res[i].stats = Stats{add, del}
	}

	if color {
		args = append(args, "--color=always")
	} else {
		args = append(args, "--no-color")
	}
	if context > 0 {
		args = append(args, fmt.Sprintf("-U%d", context))
	}
	out = runGit(t, dir, true, append(args, "A", "B")...)
	header := []byte("diff --git a/A/")
	if color {
		header = []byte("\x1b[1mdiff --git a/A/")
	}
	for len(out) > 0 {
		if !bytes.HasPrefix(out, header) {
			t.Fatalf("unexpected git output %q", out[:min(len(out), 200)])
		}
		rest := out[len(header):]
		i, ok := names[string(rest[:bytes.IndexByte(rest, ' ')])]
		if !ok {
			t.Fatalf("unexpected git output %q", out[:min(len(out), 200)])
		}
		end := bytes.Index(out, append([]byte{'\n'}, header...))
		var sect []byte
		if end < 0 {
			sect, out = out, nil
		} else {
			sect, out = out[:end+1], out[end+1:]
		}
		res[i].hunks = stripHeader(sect)
	}
	return res
}

// applyBatch applies our hunks for all pairs with one git apply --check
// and one git apply, and returns the resulting files. Pairs whose hunks are
// empty are not part of the patch and come back as a.
func applyBatch(t testing.TB, pairs []pair, hunks [][]byte) [][]byte {
	t.Helper()
	dir := t.TempDir()
	var patch bytes.Buffer
	for i, p := range pairs {
		n := fmt.Sprintf("f%05d", i)
		if err := os.WriteFile(filepath.Join(dir, n), p.a, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(hunks[i]) == 0 {
			continue
		}
		fmt.Fprintf(&patch, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", n, n, n, n)
		patch.Write(hunks[i])
	}
	if err := os.WriteFile(filepath.Join(dir, "all.patch"), patch.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if patch.Len() > 0 {
		runGit(t, dir, false, "apply", "--check", "all.patch")
		runGit(t, dir, false, "apply", "all.patch")
	}
	got := make([][]byte, len(pairs))
	for i := range pairs {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)))
		if err != nil {
			t.Fatal(err)
		}
		got[i] = b
	}
	return got
}
