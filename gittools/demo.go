package gittools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/session"
)

// DemoOptions configure RunDemo.
type DemoOptions struct {
	// Out receives the narration.
	Out io.Writer
	// Terminal is where the person approves the push; nil with Yes.
	Terminal review.Terminal
	// Yes approves the push without asking.
	Yes bool
	// Dir is where the demo's repository and state go; "" is a new
	// temporary directory, removed afterwards.
	Dir string
}

// RunDemo shows airlock end to end: it makes a repository, runs a scripted
// worker through the real tools, has the push approved (by the person at
// the terminal, or with Yes by policy), pushes, and prints the
// repository's git log --stat.
func RunDemo(ctx context.Context, o DemoOptions) error {
	if !o.Yes && (o.Terminal == nil || !o.Terminal.IsTerminal()) {
		return review.ErrNoTerminal
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "airlock-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	repo := filepath.Join(dir, "project")
	say := func(format string, args ...any) { fmt.Fprintf(o.Out, format+"\n", args...) }
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=You", "GIT_AUTHOR_EMAIL=you@example.com",
			"GIT_COMMITTER_NAME=You", "GIT_COMMITTER_EMAIL=you@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %v: %s", args[0], err, out)
		}
		return string(out), nil
	}
	if err := os.MkdirAll(filepath.Join(repo, "templates"), 0o755); err != nil {
		return err
	}
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# Demo project\n\nQuarterly reports live in reports/.\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "templates", "report.md"), []byte("# Q? report\n\n## Summary\n\nTODO\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "Start the project"}} {
		if _, err := git(args...); err != nil {
			return err
		}
	}
	say("A repository at %s, with one commit on main.", repo)

	w := &session.Worker{
		Name: "demo-writer", Description: "Writes a quarterly report",
		Author:        session.Person{Name: "Demo Writer", Email: "demo@airlock.invalid"},
		DefaultTarget: &session.TargetSpec{Type: "local", Path: repo, Branch: "reports"},
		Targets:       map[string]*session.TargetSpec{},
		AutoPull:      []session.PullSpec{{Path: ".", Source: &session.TargetSpec{Type: "local", Path: repo, Branch: "main"}}},
	}
	lg, err := ledger.Open(filepath.Join(dir, "state", "ledger.jsonl"))
	if err != nil {
		return err
	}
	defer lg.Close()
	policy := approval.Policy{}
	if o.Yes {
		policy.AutoApprove = []string{session.TargetID(w.DefaultTarget)}
	}
	gate := approval.NewGate(lg, policy)
	s, err := session.New(ctx, w, session.Options{Gate: gate})
	if err != nil {
		return err
	}
	defer s.Close()

	call := func(tool string, args map[string]any) (string, error) {
		raw, _ := json.Marshal(args)
		say("\n> worker calls %s %s", tool, raw)
		out, err := Call(ctx, s, tool, raw, nil)
		if err != nil {
			say("  refused: %v", err)
			return "", err
		}
		say("%s", indent(out))
		return out, nil
	}
	steps := []struct {
		tool string
		args map[string]any
		fail bool
	}{
		{"read_file", map[string]any{"path": "templates/report.md"}, false},
		{"write_file", map[string]any{"path": "reports/q3.md", "content": "# Q3 report\n\n## Summary\n\nRevenue grew 15% on Q2.\nCosts were flat.\n"}, false},
		{"edit_file", map[string]any{"path": "reports/q3.md", "old_text": "Costs were flat.", "new_text": "Costs fell 2%."}, false},
		{"write_file", map[string]any{"path": ".env", "content": "API_KEY=oops"}, true},
		{"checkpoint", map[string]any{"name": "before-cleanup"}, false},
		{"delete_file", map[string]any{"path": "README.md"}, false},
		{"git_status", map[string]any{}, false},
		{"rollback", map[string]any{"name": "before-cleanup"}, false},
		{"git_stage", map[string]any{"message": "Add the Q3 report"}, false},
		{"git_diff", map[string]any{"commit_id": ""}, false},
	}
	say("\nThe worker writes in the sandbox: nothing touches %s until a push is approved.", repo)
	for _, st := range steps {
		if _, err := call(st.tool, st.args); err != nil && !st.fail {
			return err
		}
	}
	commits := s.Status().Staged
	if len(commits) == 0 {
		return errors.New("demo: nothing was staged")
	}
	id := shortid.Hash(commits[len(commits)-1].ID)
	if _, err := call("git_diff", map[string]any{"commit_id": id}); err != nil {
		return err
	}
	if !o.Yes {
		say("\nThe worker asks to push. You are the reviewer: the prompt below is the one `airlock review` shows.")
		go reviewLocally(ctx, gate, o.Terminal)
	} else {
		say("\nThe worker asks to push; --yes approves it.")
	}
	if _, err := call("git_push", map[string]any{"commit_id": id}); err != nil {
		say("\nThe push did not happen, and %s is untouched.", repo)
		return nil
	}
	log, err := git("log", "--stat", "--format=%h %an: %s", "reports")
	if err != nil {
		return err
	}
	say("\nThe repository now has the branch reports; git log --stat reports:\n%s", indent(log))
	rep, err := ledger.Verify(lg.Path())
	if err == nil && rep.OK() {
		say("Every request and decision is in the ledger (%d records, chain intact).", rep.Records)
	}
	return nil
}

// reviewLocally answers the gate's requests on t, as airlock review would.
func reviewLocally(ctx context.Context, gate *approval.Gate, t review.Terminal) {
	events, stop := gate.Subscribe()
	defer stop()
	ask := func(r *approval.Request) {
		d, err := review.Prompt(t, r)
		if err != nil {
			if werr := gate.Withdraw(r.ID, "the reviewer left: "+err.Error()); werr != nil {
				fmt.Fprintf(t, "  Not withdrawn: %v\n", werr)
			}
			return
		}
		d.Request = r.ID
		if _, err := gate.Resolve(d); err != nil {
			fmt.Fprintf(t, "  Not recorded: %v\n", err)
		}
	}
	for _, r := range gate.Pending() {
		ask(r)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			if e.Kind == approval.EventAdded {
				ask(e.Request)
			}
		}
	}
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
