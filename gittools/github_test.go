package gittools_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/github"
	"github.com/airlock-dev/airlock/targets/githubemu"
	"github.com/airlock-dev/airlock/worker"
)

// A worker whose targets are on GitHub (the emulator): auto_pull from the
// default branch, push a new branch for review, then a second push on top,
// the reviewer shown the protected default branch and the new ref.
func TestWorkerOnGitHub(t *testing.T) {
	const token = "ghp_gittoolsTESTtoken000000000000000000"
	emu, err := githubemu.New(t.TempDir(), "octo-org", "reports", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	// The repository on "GitHub" has a first commit on main.
	seed := t.TempDir()
	git(t, seed, "init", "-q", "-b", "main", ".")
	git(t, seed, "commit", "-q", "--allow-empty", "-m", "init")
	git(t, seed, "push", "-q", emu.Dir(), "main")

	main := &worker.TargetSpec{Type: "github", Repo: "octo-org/reports", Branch: "main"}
	w := &worker.Worker{
		Name: "gh", Author: worker.Person{Name: "GH Worker", Email: "gh@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "github", Repo: "octo-org/reports", Branch: "airlock/q3"},
		Targets:       map[string]*worker.TargetSpec{"main": main},
		AutoPull:      []worker.PullSpec{{Path: ".", Source: main}},
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	gate := approval.NewGate(l, approval.Policy{})
	var seen []*approval.Request
	reviewer(t, gate, func(r *approval.Request) approval.Decision {
		seen = append(seen, r)
		return approval.Decision{Verdict: approval.Approve}
	})
	s, err := session.New(context.Background(), w, session.Options{
		Gate: gate, Timeout: 10 * time.Second,
		OpenTarget: func(ctx context.Context, spec *worker.TargetSpec) (targets.Target, error) {
			return github.Open(ctx, spec.Repo, targets.GitHubOptions{APIURL: emu.URL, GitURL: emu.GitURL, Token: token})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	h := &harness{t: t, s: s, gate: gate, l: l}

	h.call("write_file", map[string]any{"path": "reports/q3.md", "content": "# Q3\n\nRevenue grew.\n"})
	h.call("write_file", map[string]any{"path": "charts/q3.bin", "content": "\x00\x01binary\x00"})
	h.call("git_stage", map[string]any{"message": "Add the Q3 report"})
	out := h.call("git_push", nil)
	mustContain(t, "the first push", out, "pushed", "github:octo-org/reports", "airlock/q3", "2 files")
	h.call("edit_file", map[string]any{"path": "reports/q3.md", "old_text": "Revenue grew.", "new_text": "Revenue grew 15%."})
	h.call("git_stage", map[string]any{"message": "Say by how much"})
	mustContain(t, "the second push", h.call("git_push", nil), "pushed", "1 file")

	log := git(t, emu.Dir(), "log", "--format=%an <%ae> %s", "airlock/q3")
	if log != "GH Worker <gh@example.com> Say by how much\nGH Worker <gh@example.com> Add the Q3 report\nOwner <owner@example.com> init\n" {
		t.Errorf("the branch on GitHub:\n%s", log)
	}
	if got := git(t, emu.Dir(), "show", "airlock/q3:reports/q3.md"); got != "# Q3\n\nRevenue grew 15%.\n" {
		t.Errorf("reports/q3.md on GitHub: %q", got)
	}
	git(t, emu.Dir(), "fsck", "--strict")
	if len(seen) != 2 {
		t.Fatalf("%d requests reviewed", len(seen))
	}
	if r := seen[0]; !r.NewRef || r.DefaultBranch != "main" || r.Target != "github:octo-org/reports" || len(r.Files) != 2 {
		t.Errorf("first request: new %v, default branch %q, target %q, %d files", r.NewRef, r.DefaultBranch, r.Target, len(r.Files))
	}
	var flags []string
	for _, f := range seen[0].Flags {
		flags = append(flags, f.Code)
	}
	mustContain(t, "the first request's flags", strings.Join(flags, " "), "new-ref", "binary")

	// Pushing to main itself (the default branch) is flagged as protected.
	h.call("write_file", map[string]any{"path": "README.md", "content": "# reports\n"})
	h.call("git_stage", map[string]any{"message": "README"})
	h.call("git_push", map[string]any{"target": "main"})
	var protected bool
	for _, f := range seen[2].Flags {
		protected = protected || f.Severity == approval.High
	}
	if !protected {
		t.Errorf("a push to GitHub's default branch was not flagged high: %+v", seen[2].Flags)
	}
}
