package session_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
)

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gittest.Git(t, dir, args...)
}

// repo makes a repository with one commit on main holding files; bare
// makes it a bare clone of that instead.
func repo(t testing.TB, bare bool, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main", ".")
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "init")
	if !bare {
		return dir
	}
	b := filepath.Join(t.TempDir(), "bare.git")
	git(t, dir, "clone", "-q", "--bare", dir, b)
	return b
}

// commitTo adds a commit to path's main branch, as someone else would.
func commitTo(t testing.TB, path, file, content string) string {
	t.Helper()
	if strings.HasSuffix(path, ".git") {
		wt := t.TempDir()
		git(t, wt, "clone", "-q", path, ".")
		os.WriteFile(filepath.Join(wt, file), []byte(content), 0o644)
		git(t, wt, "add", "-A")
		git(t, wt, "commit", "-qm", "upstream "+file)
		git(t, wt, "push", "-q", "origin", "main")
		return strings.TrimSpace(git(t, path, "rev-parse", "main"))
	}
	os.WriteFile(filepath.Join(path, file), []byte(content), 0o644)
	git(t, path, "add", "-A")
	git(t, path, "commit", "-qm", "upstream "+file)
	return strings.TrimSpace(git(t, path, "rev-parse", "main"))
}

type env struct {
	s    *session.Session
	gate *approval.Gate
	l    *ledger.Ledger
	repo string
}

type config struct {
	policy  approval.Policy
	timeout time.Duration
	limits  memfs.Limits
	targets map[string]string // name -> bare repository
	wrap    func(targets.Target) targets.Target
	run     *session.RunOptions
	warn    func(string) // the operator's warnings (Options.Warn)
}

// newEnv opens a session whose default target is the repository at path
// (main), pulled whole at the start.
func newEnv(t testing.TB, path string, c config) *env {
	t.Helper()
	typ := "local"
	if strings.HasSuffix(path, ".git") {
		typ = "local-bare"
	}
	spec := &worker.TargetSpec{Type: typ, Path: path, Branch: "main"}
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: spec, Targets: map[string]*worker.TargetSpec{}, Limits: c.limits,
		AutoPull: []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: typ, Path: path, Branch: "main"}}},
	}
	for name, p := range c.targets {
		w.Targets[name] = &worker.TargetSpec{Type: "local-bare", Path: p, Branch: "main"}
	}
	e := newEnvWorker(t, w, c)
	e.repo = path
	return e
}

// newEnvWorker opens a session of w, as newEnv does.
func newEnvWorker(t testing.TB, w *worker.Worker, c config) *env {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	gate := approval.NewGate(l, c.policy)
	if c.timeout == 0 {
		c.timeout = 10 * time.Second
	}
	opts := session.Options{Gate: gate, Timeout: c.timeout, Run: c.run, Warn: c.warn}
	if c.wrap != nil {
		opts.OpenTarget = func(ctx context.Context, spec *worker.TargetSpec) (targets.Target, error) {
			t, err := session.OpenTarget(ctx, spec)
			if err != nil {
				return nil, err
			}
			return c.wrap(t), nil
		}
	}
	s, err := session.New(context.Background(), w, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &env{s: s, gate: gate, l: l}
}

func (e *env) write(t testing.TB, p, content string) {
	t.Helper()
	if err := e.s.Workspace().WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitPending waits until the gate holds n requests.
func waitPending(t testing.TB, gate *approval.Gate, n int) []*approval.Request {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p := gate.Pending(); len(p) == n {
			return p
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the gate never held %d requests (it holds %d)", n, len(gate.Pending()))
	return nil
}

// pushRecords counts the ledger's push records by result.
func pushRecords(t testing.TB, l *ledger.Ledger) map[string]int {
	t.Helper()
	recs, err := ledger.Records(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range recs {
		if r.Kind == ledger.KindPush {
			var d struct{ Result string }
			if err := jsonUnmarshal(r.Data, &d); err != nil {
				t.Fatal(err)
			}
			out[d.Result]++
		} else {
			out[r.Kind]++
		}
	}
	return out
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
