package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

// checkRoot is a directory of real repositories a worker file may name:
// proj (main and reports), bare.git, empty (no commit), detached (HEAD
// detached), plain (a directory), file.txt.
func checkRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	os.MkdirAll(filepath.Join(proj, "templates"), 0o755)
	os.WriteFile(filepath.Join(proj, "templates", "q.md"), []byte("# Q\n"), 0o644)
	git(t, root, "init", "-q", "-b", "main", proj)
	git(t, proj, "add", "-A")
	git(t, proj, "commit", "-qm", "init")
	git(t, proj, "branch", "reports")
	git(t, root, "clone", "-q", "--bare", proj, filepath.Join(root, "bare.git"))
	git(t, root, "init", "-q", "-b", "trunk", filepath.Join(root, "empty"))
	git(t, root, "clone", "-q", proj, filepath.Join(root, "detached"))
	git(t, filepath.Join(root, "detached"), "checkout", "-q", "--detach")
	os.Mkdir(filepath.Join(root, "plain"), 0o755)
	os.WriteFile(filepath.Join(root, "file.txt"), []byte("x"), 0o644)
	return root
}

func checkWorker(t *testing.T, root, front string) (*worker.Worker, error) {
	t.Helper()
	file := filepath.Join(root, "worker.md")
	if err := os.WriteFile(file, []byte("---\nname: w\n"+front+"---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := worker.Load(file)
	if err != nil {
		t.Fatalf("%s: %v", front, err)
	}
	return w, w.Check()
}

// A worker file's repositories and branches are checked when airlock
// starts: each mistake is refused with the file, line and column of what
// is wrong, the key, and what to write instead (golden messages); what is
// right passes, including a default target's branch that the first push
// creates.
func TestWorkerCheck(t *testing.T) {
	root := checkRoot(t)
	mistakes := []struct{ name, front string }{
		{"default target missing", "git:\n  default_target: { type: local, path: ./nope }\n"},
		{"default target a plain directory", "git:\n  default_target: { type: local, path: ./plain }\n"},
		{"default target a file", "git:\n  default_target: { type: local, path: ./file.txt }\n"},
		{"local names a bare repository", "git:\n  default_target: { type: local, path: ./bare.git }\n"},
		{"local-bare names a working tree", "git:\n  default_target: { type: local-bare, path: ./proj }\n"},
		{"local names a .git directory", "git:\n  default_target: { type: local, path: ./proj/.git }\n"},
		{"named target missing", "git:\n  default_target: { type: local, path: ./proj }\n  targets:\n    backup: { type: local-bare, path: /nowhere/backup.git }\n"},
		{"auto_pull branch missing", "git:\n  default_target: { type: local, path: ./proj, branch: agent }\n  auto_pull:\n    - path: templates/\n      source: { type: local, path: ./proj, branch: templates }\n"},
		{"auto_pull of a named target whose branch is missing", "git:\n  default_target: { type: local, path: ./proj }\n  targets:\n    backup: { type: local-bare, path: ./bare.git, branch: old }\n  auto_pull:\n    - path: data/\n      source: backup\n"},
		{"auto_pull of the default target's missing branch", "git:\n  default_target: { type: local, path: ./proj, branch: agent }\n  auto_pull: [{ path: . }]\n"},
		{"auto_pull source not a repository", "git:\n  default_target: { type: local, path: ./proj }\n  auto_pull:\n    - path: .\n      source: { type: local, path: ./plain }\n"},
		{"auto_pull source with HEAD detached", "git:\n  default_target: { type: local, path: ./proj, branch: agent }\n  auto_pull:\n    - path: .\n      source: { type: local, path: ./detached }\n"},
		{"auto_pull from a repository without commits", "git:\n  default_target: { type: local, path: ./proj }\n  auto_pull:\n    - path: .\n      source: { type: local, path: ./empty }\n"},
		{"a repository of several missing", "repos:\n  api: { default_target: { type: local, path: ./proj } }\n  web: { default_target: { type: local, path: ./web } }\n"},
	}
	var got strings.Builder
	for _, c := range mistakes {
		_, err := checkWorker(t, root, c.front)
		var ce *worker.ConfigError
		if !errors.As(err, &ce) || ce.Line == 0 {
			t.Errorf("%s: %v, want a ConfigError with a line", c.name, err)
			continue
		}
		msg := regexp.MustCompile(`detached at [0-9a-f]{7}`).ReplaceAllString(strings.ReplaceAll(err.Error(), root, "$ROOT"), "detached at COMMIT")
		fmt.Fprintf(&got, "%s:\n  %v\n", c.name, msg)
	}
	checkGolden(t, "worker-check.golden", got.String())

	for _, front := range []string{
		// The README's shape: the default target's branch is made by the
		// first push, forking from the branch auto_pull takes files from.
		"git:\n  default_target: { type: local, path: ./proj, branch: agent }\n  auto_pull:\n    - path: templates/\n      source: { type: local, path: ./proj }\n",
		"git:\n  default_target: { type: local, path: ./proj/templates, branch: reports }\n  auto_pull: [{ path: . }]\n",
		"git:\n  default_target: { type: local-bare, path: ./bare.git, branch: main }\n  targets:\n    site: { type: github, repo: acme/site }\n  auto_pull: [{ path: ., source: site }]\n",
		// Nothing to fork from: the first push makes the first commit.
		"git:\n  default_target: { type: local, path: ./empty }\n  auto_pull: [{ path: . }]\n",
		"repos:\n  api: { default_target: { type: local, path: ./proj }, auto_pull: [{ path: . }] }\n  web: { default_target: { type: local-bare, path: ./bare.git } }\n",
	} {
		if _, err := checkWorker(t, root, front); err != nil {
			t.Errorf("%s: %v", front, err)
		}
	}
}

// The advice for an auto_pull of a branch the first push creates works:
// written as it says, the worker starts with the branch it forks from.
func TestWorkerCheckAdviceWorks(t *testing.T) {
	root := checkRoot(t)
	_, err := checkWorker(t, root, "git:\n  default_target: { type: local, path: ./proj, branch: agent }\n  auto_pull: [{ path: . }]\n")
	if err == nil {
		t.Fatal("an auto_pull of a branch that does not exist passed")
	}
	_, advice, ok := strings.Cut(err.Error(), "e.g. source: ")
	if !ok {
		t.Fatalf("no advice in %v", err)
	}
	w, err := checkWorker(t, root, "git:\n  default_target: { type: local, path: ./proj, branch: agent }\n  auto_pull: [{ path: ., source: "+advice+" }]\n")
	if err != nil {
		t.Fatalf("following the advice (%s): %v", advice, err)
	}
	s := newSession(t, w)
	if st := s.Status(); st.Base.IsZero() || st.Branch != "main" {
		t.Errorf("the worker started from %v of %q, want main's commit", st.Base, st.Branch)
	}
}

// The default worker (airlock serve without --worker) needs its directory
// to be in a working tree with a branch checked out; a branch without a
// commit yet is fine (the first push makes it).
func TestDefaultWorkerCheck(t *testing.T) {
	root := checkRoot(t)
	orphan := filepath.Join(root, "orphan")
	git(t, root, "clone", "-q", filepath.Join(root, "proj"), orphan)
	git(t, orphan, "switch", "-q", "--orphan", "fresh")
	for _, c := range []struct{ dir, want string }{
		{"proj", ""},
		{"proj/templates", ""},
		{"empty", ""},
		{"orphan", ""},
		{"plain", "give --worker FILE"},
		{"bare.git", "is a bare repository"},
		{"detached", "HEAD is detached at"},
	} {
		err := worker.Default(filepath.Join(root, c.dir)).Check()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("the default worker in %s: %v, want %q", c.dir, err, c.want)
		}
	}
}

// newSession opens a session of w with a gate that asks.
func newSession(t *testing.T, w *worker.Worker) *session.Session {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	gate := approval.NewGate(l, approval.Policy{})
	s, err := session.New(context.Background(), w, session.Options{Gate: gate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gittest.Git(t, dir, args...)
}
