package gittools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

func TestMain(m *testing.M) {
	sandbox.Main() // this test binary may be a command sandbox's helper
	os.Exit(m.Run())
}

// In read-only mode the file tools that write are offered (a client that
// calls one learns why it cannot, where a missing tool would be "unknown")
// and refuse, saying why; reading still works.
func TestReadOnlyModeRefusesFileWrites(t *testing.T) {
	repo := project(t)
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "local", Path: repo, Branch: "main"},
		Targets:       map[string]*worker.TargetSpec{},
		AutoPull:      []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local", Path: repo, Branch: "main"}}},
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := session.New(context.Background(), w, session.Options{Gate: approval.NewGate(l, approval.Policy{}), Timeout: time.Second,
		Run: &session.RunOptions{Mode: session.RunReadOnly}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	offered := map[string]bool{}
	for _, tool := range gittools.ToolsFor(s) {
		offered[tool.Name] = true
	}
	for _, name := range []string{"read_file", "search_files", "git_status", "run"} {
		if !offered[name] {
			t.Errorf("read-only mode does not offer %s", name)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": "x.md", "content": "x"}},
		{"edit_file", map[string]any{"path": "README.md", "old_text": "Project", "new_text": "P"}},
		{"delete_file", map[string]any{"path": "README.md"}},
		{"move_file", map[string]any{"source": "README.md", "destination": "R.md"}},
	} {
		if !offered[c.tool] {
			t.Errorf("read-only mode does not offer %s (it refuses it when called, saying why)", c.tool)
		}
		raw, _ := json.Marshal(c.args)
		_, err := gittools.Call(context.Background(), s, c.tool, raw, nil)
		mustContain(t, c.tool, errString(err), "read-only", "--run read-only")
	}
	out, err := gittools.Call(context.Background(), s, "read_file", json.RawMessage(`{"path":"README.md"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "read_file", out, "# Project")
}
