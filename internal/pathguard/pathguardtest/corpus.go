// Package pathguardtest holds the hostile-path corpus every room that
// applies the guard (memfs, staging, the tool surface) tests itself
// against: each path with the rule that must refuse it.
package pathguardtest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/pathguard"
)

// RuleCase is a hostile path and the rule that refuses it.
type RuleCase struct {
	Path string         `json:"path"`
	Rule pathguard.Rule `json:"rule"`
}

// File is the path of a corpus file (under pathguard's testdata) from any
// package's tests.
func File(name string) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "testdata", name)
}

// Rules reads hostile-paths-rules.jsonl.
func Rules(t testing.TB) []RuleCase {
	t.Helper()
	f, err := os.Open(File("hostile-paths-rules.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []RuleCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c RuleCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Corpus reads hostile-paths.jsonl, the shared corpus: one JSON string per
// line.
func Corpus(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(File("hostile-paths.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var s string
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, s)
	}
	return out
}
