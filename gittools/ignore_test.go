package gittools_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

var update = flag.Bool("update", false, "rewrite the golden answers in testdata")

// pyProject is a Python project whose .gitignore names what pytest and
// the interpreter leave behind.
func pyProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main", ".")
	for p, c := range map[string]string{
		".gitignore":         "__pycache__/\n*.py[cod]\n.pytest_cache/\n",
		"calc.py":            "def add(a, b):\n    return a + b\n",
		"tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "init")
	return dir
}

// pySession opens a session on repo whose pushes to it are approved, with
// commands enabled when run is true.
func pySession(t *testing.T, repo string, run bool) *session.Session {
	t.Helper()
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "local", Path: repo, Branch: "main"},
		Targets:       map[string]*worker.TargetSpec{},
		AutoPull:      []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local", Path: repo, Branch: "main"}}},
	}
	opts := session.Options{Timeout: 10 * time.Second}
	if run {
		// The mirror in a directory the jail's user (nobody, under root)
		// can pass through.
		dir := t.TempDir()
		for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
			os.Chmod(d, 0o711)
		}
		opts.Run = &session.RunOptions{MirrorDir: filepath.Join(dir, "mirrors")}
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	opts.Gate = approval.NewGate(l, approval.Policy{AutoApprove: []string{"local:" + repo}})
	s, err := session.New(context.Background(), w, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func call(t *testing.T, s *session.Session, tool string, args map[string]any) string {
	t.Helper()
	raw, _ := json.Marshal(args)
	out, err := gittools.Call(context.Background(), s, tool, raw, nil)
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return out
}

// The motivating case: python3 -m pytest run in the sandbox leaves
// __pycache__ and .pytest_cache behind. They land in the workspace (the
// next run finds its cache), but the run's answer, git_status and a
// git_stage without files treat them as git does: not changes.
func TestPytestCachesAreIgnored(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run(); err != nil {
		t.Skip("the system's python3 has no pytest (apt-get install python3-pytest): ", err)
	}
	repo := pyProject(t)
	s := pySession(t, repo, true)
	out := call(t, s, "run", map[string]any{"command": "python3 -m pytest -q -p cacheprovider && echo made > result.txt"})
	t.Log(out)
	mustContain(t, "run", out, "exit 0", "1 passed", "created: result.txt", "ignored: ", " paths .gitignore excludes")
	for _, hidden := range []string{"__pycache__", ".pytest_cache", ".pyc"} {
		if strings.Contains(out[:strings.Index(out, "--- stdout")], hidden) {
			t.Errorf("the run's answer lists %s as a change:\n%s", hidden, out)
		}
	}
	if _, err := s.Workspace().Stat(".pytest_cache"); err != nil {
		t.Errorf("the ignored outputs did not land in the workspace: %v", err)
	}

	status := call(t, s, "git_status", nil)
	mustContain(t, "git_status", status, "+ result.txt", "ignored: ")
	if strings.Contains(status, "__pycache__") || strings.Contains(status, ".pytest_cache") {
		t.Errorf("git_status lists the caches:\n%s", status)
	}
	listed := call(t, s, "git_status", map[string]any{"ignored": true})
	mustContain(t, "git_status ignored", listed, "! .pytest_cache/", "! tests/__pycache__/")

	staged := call(t, s, "git_stage", map[string]any{"message": "Run the tests"})
	mustContain(t, "git_stage", staged, "(1 file)", "+ result.txt", "left out ")
	call(t, s, "git_push", nil)
	tree := git(t, repo, "ls-tree", "-r", "--name-only", "main")
	if strings.Contains(tree, "pycache") || strings.Contains(tree, ".pyc") || !strings.Contains(tree, "result.txt") {
		t.Errorf("pushed tree:\n%s", tree)
	}

	// A second run finds the cache the first one left.
	out = call(t, s, "run", map[string]any{"command": "test -d .pytest_cache && python3 -m pytest -q --lf"})
	mustContain(t, "second run", out, "exit 0", "passed")
}

// git_status's answer with ignored: true, git_stage's when it leaves
// ignored files out and when a named one is staged anyway, and the
// advice when everything left is ignored.
func TestIgnoredAnswers(t *testing.T) {
	repo := pyProject(t)
	os.WriteFile(filepath.Join(repo, ".git", "info", "exclude"), []byte("*.local\n"), 0o644)
	s := pySession(t, repo, false)
	for p, c := range map[string]string{
		"calc.py":                          "def add(a, b):\n    return b + a\n",
		"__pycache__/calc.cpython-311.pyc": "\x00\x9b",
		"tests/__pycache__/test_calc.cpython-311.pyc": "\x00\x9b",
		".pytest_cache/v/cache/nodeids":               "[]",
		"stray.pyc":                                   "\x00",
		"notes.local":                                 "mine",
	} {
		call(t, s, "write_file", map[string]any{"path": p, "content": c})
	}
	got := call(t, s, "git_status", map[string]any{"ignored": true})
	// The base line names a temporary directory and a fresh commit.
	got = got[strings.Index(got, "\n")+1:]
	golden := filepath.Join("testdata", "status_ignored.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, []byte(got+"\n"), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got+"\n" != string(want) {
		t.Errorf("git_status ignored=true:\n%s\nwant (%s):\n%s", got, golden, want)
	}
	mustContain(t, "git_status", call(t, s, "git_status", nil), "M calc.py", "ignored: 5 files .gitignore excludes")

	staged := call(t, s, "git_stage", map[string]any{"message": "Swap"})
	mustContain(t, "git_stage", staged, "(1 file)", "M calc.py", "left out 5 files .gitignore excludes")
	staged = call(t, s, "git_stage", map[string]any{"message": "Keep the note", "files": []string{"notes.local"}})
	mustContain(t, "git_stage named", staged, "+ notes.local", "ignored by .gitignore, staged because files named them (as git add -f): notes.local")

	raw, _ := json.Marshal(map[string]any{"message": "More"})
	_, err = gittools.Call(context.Background(), s, "git_stage", raw, nil)
	mustContain(t, "git_stage with only ignored files", errString(err), "no unstaged changes", "4 untracked files are ignored", "name one in files")
}
