package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/shortid"
	workerfile "github.com/airlock-dev/airlock/worker"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/session"
)

func demo(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("airlock demo", "airlock demo [--yes]",
		"Shows airlock end to end, with nothing to set up: a temporary repository, a scripted worker\n"+
			"using the real tools, and a push that you approve (or reject) at the prompt a reviewer sees.", stderr)
	yes := fs.Bool("yes", false, "approve the push without asking (for a run without a terminal)")
	if err := parse(fs, args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o := demoOptions{Out: stdout, Yes: *yes}
	if !*yes {
		tty, err := review.OpenTTY()
		if err != nil {
			return &exitError{exitNoTerminal, fmt.Errorf("airlock demo asks you to approve a push, so it needs a terminal; " +
				"run it in one, or run `airlock demo --yes` to approve automatically")}
		}
		defer tty.Close()
		o.Terminal = tty
	}
	return runDemo(ctx, o)
}

// demoOptions configure runDemo.
type demoOptions struct {
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

// demoRun is one run of the demo: its repository, its narration and the
// worker's session.
type demoRun struct {
	ctx  context.Context
	out  io.Writer
	repo string
	s    *session.Session
}

func (d *demoRun) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

// git runs git in the demo's repository as the person at the terminal.
func (d *demoRun) git(args ...string) (string, error) {
	cmd := exec.CommandContext(d.ctx, "git", append([]string{"-C", d.repo}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=You", "GIT_AUTHOR_EMAIL=you@example.com",
		"GIT_COMMITTER_NAME=You", "GIT_COMMITTER_EMAIL=you@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", args[0], err, out)
	}
	return string(out), nil
}

// call is the worker calling a tool, narrated.
func (d *demoRun) call(tool string, args map[string]any) (string, error) {
	raw, _ := json.Marshal(args)
	d.say("\n> worker calls %s %s", tool, raw)
	out, err := gittools.Call(d.ctx, d.s, tool, raw, nil)
	if err != nil {
		d.say("  refused: %v", err)
		return "", err
	}
	d.say("%s", indent(out))
	return out, nil
}

// runDemo shows airlock end to end: it makes a repository, runs a scripted
// worker through the real tools, has the push approved (by the person at
// the terminal, or with Yes by policy), pushes, and prints the
// repository's git log --stat.
func runDemo(ctx context.Context, o demoOptions) error {
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
	d := &demoRun{ctx: ctx, out: o.Out, repo: filepath.Join(dir, "project")}
	if err := d.makeRepo(); err != nil {
		return err
	}
	w := &workerfile.Worker{
		Name: "demo-writer", Description: "Writes a quarterly report",
		Author:        workerfile.Person{Name: "Demo Writer", Email: "demo@airlock.invalid"},
		DefaultTarget: &workerfile.TargetSpec{Type: "local", Path: d.repo, Branch: "reports"},
		Targets:       map[string]*workerfile.TargetSpec{},
		AutoPull:      []workerfile.PullSpec{{Path: ".", Source: &workerfile.TargetSpec{Type: "local", Path: d.repo, Branch: "main"}}},
	}
	lg, err := ledger.Open(filepath.Join(dir, "state", "ledger.jsonl"))
	if err != nil {
		return err
	}
	defer lg.Close()
	policy := approval.Policy{}
	if o.Yes {
		policy.AutoApprove = []string{w.DefaultTarget.ID()}
	}
	gate := approval.NewGate(lg, policy)
	if d.s, err = session.New(ctx, w, session.Options{Gate: gate}); err != nil {
		return err
	}
	defer d.s.Close()
	id, err := d.work()
	if err != nil {
		return err
	}
	if !o.Yes {
		d.say("\nThe worker asks to push. You are the reviewer: the prompt below is the one `airlock review` shows.")
		go reviewLocally(ctx, gate, o.Terminal)
	} else {
		d.say("\nThe worker asks to push; --yes approves it.")
	}
	return d.push(id, lg.Path())
}

// makeRepo makes the demo's repository: one commit on main.
func (d *demoRun) makeRepo() error {
	if err := os.MkdirAll(filepath.Join(d.repo, "templates"), 0o755); err != nil {
		return err
	}
	os.WriteFile(filepath.Join(d.repo, "README.md"), []byte("# Demo project\n\nQuarterly reports live in reports/.\n"), 0o644)
	os.WriteFile(filepath.Join(d.repo, "templates", "report.md"), []byte("# Q? report\n\n## Summary\n\nTODO\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "Start the project"}} {
		if _, err := d.git(args...); err != nil {
			return err
		}
	}
	d.say("A repository at %s, with one commit on main.", d.repo)
	return nil
}

// work is the scripted worker's work in the sandbox, up to a staged
// commit, whose short id it returns.
func (d *demoRun) work() (string, error) {
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
	d.say("\nThe worker writes in the sandbox: nothing touches %s until a push is approved.", d.repo)
	for _, st := range steps {
		if _, err := d.call(st.tool, st.args); err != nil && !st.fail {
			return "", err
		}
	}
	commits := d.s.Status().Staged
	if len(commits) == 0 {
		return "", errors.New("demo: nothing was staged")
	}
	id := shortid.Hash(commits[len(commits)-1].ID)
	if _, err := d.call("git_diff", map[string]any{"commit_id": id}); err != nil {
		return "", err
	}
	return id, nil
}

// push is the worker's push of commit id and, when it lands, what the
// repository and the ledger show.
func (d *demoRun) push(id, ledgerPath string) error {
	if _, err := d.call("git_push", map[string]any{"commit_id": id}); err != nil {
		d.say("\nThe push did not happen, and %s is untouched.", d.repo)
		return nil
	}
	log, err := d.git("log", "--stat", "--format=%h %an: %s", "reports")
	if err != nil {
		return err
	}
	d.say("\nThe repository now has the branch reports; git log --stat reports:\n%s", indent(log))
	rep, err := ledger.Verify(ledgerPath)
	if err == nil && rep.OK() {
		d.say("Every request and decision is in the ledger (%d records, chain intact).", rep.Records)
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
