package gittools_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/worker"
)

// The README's own worker file, as a new user copies it, works in every
// session: each pushes to reports with the right parent, the templates from
// main are never taken for the worker's own files, and git_pull works.
func TestREADMEWorkerThroughThreeSessions(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)### A worker file\n\n```markdown\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no worker file example")
	}
	repo := project(t)
	bare := filepath.Join(t.TempDir(), "backup.git")
	git(t, filepath.Dir(bare), "init", "-q", "--bare", bare)
	example := strings.ReplaceAll(string(m[1]), "/srv/backup.git", bare)
	workerFile := filepath.Join(repo, "report-writer.md")
	if err := os.WriteFile(workerFile, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	// The worker file is not part of the project's history.
	os.WriteFile(filepath.Join(repo, ".git", "info", "exclude"), []byte("report-writer.md\n"), 0o644)
	w, err := worker.Load(workerFile)
	if err != nil {
		t.Fatal(err)
	}
	var prev string
	for i, q := range []string{"q1", "q2", "q3"} {
		h := openSession(t, w, approval.Policy{AutoApprove: []string{"local:" + repo}}, nil)
		mustContain(t, "status at the start", h.call("git_status", nil), "unstaged: nothing")
		mustContain(t, "git_pull", h.call("git_pull", nil), "")
		h.call("write_file", map[string]any{"path": "reports/" + q + ".md", "content": "# " + q + "\n"})
		h.call("git_stage", map[string]any{"message": "Report " + q})
		mustContain(t, "git_push", h.call("git_push", nil), "pushed", "(reports)")
		head := strings.TrimSpace(git(t, repo, "rev-parse", "reports"))
		parent := strings.TrimSpace(git(t, repo, "rev-parse", "reports^"))
		if i == 0 {
			if main := strings.TrimSpace(git(t, repo, "rev-parse", "main")); parent != main {
				t.Errorf("the first push's parent is %s, not main %s", parent, main)
			}
		} else if parent != prev {
			t.Errorf("session %d: the push's parent is %s, not the previous push %s", i+1, parent, prev)
		}
		if files := git(t, repo, "diff", "--name-only", "reports^", "reports"); files != "reports/"+q+".md\n" {
			t.Errorf("session %d pushed changes to:\n%s", i+1, files)
		}
		prev = head
		h.s.Close()
	}
}
