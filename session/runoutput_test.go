package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

// A run's output outlives the server, as an answered call does: after a
// kill and a resume, run_output shows it whole (what was cut too), the
// next run is numbered after it, and only the newest eight are kept, on
// disk as in memory.
func TestRunOutputSurvivesRestart(t *testing.T) {
	needSandbox(t)
	bare := repo(t, true, map[string]string{"README.md": "# p\n"})
	mirrors := t.TempDir()
	for d := mirrors; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	root := t.TempDir()
	spec := &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}
	w := &worker.Worker{Name: "tester", Author: worker.Person{Name: "T", Email: "t@example.com"},
		DefaultTarget: spec, Targets: map[string]*worker.TargetSpec{}, AutoPull: []worker.PullSpec{{Path: ".", Source: spec}}}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	must(t, err)
	defer l.Close()
	opts := func(dir *session.StateDir) session.Options {
		return session.Options{Gate: approval.NewGate(l, approval.Policy{}), State: dir,
			Run: &session.RunOptions{MirrorDir: filepath.Join(mirrors, "m")}}
	}
	dir, err := session.CreateStateDir(root, session.Meta{Worker: "tester", WorkerKey: "test"})
	must(t, err)
	s, err := session.New(context.Background(), w, opts(dir))
	must(t, err)
	long := strings.Repeat("0123456789abcdef", 2<<10) // 32 KiB: more than an answer shows
	res, err := s.Run(context.Background(), session.RunArgs{Command: "cat README.md; printf " + long + "; echo oops >&2"}, nil)
	must(t, err)
	if res.ID != "run-1" || !strings.Contains(res.Stdout, "run_output id=run-1") {
		t.Fatalf("the first run: %s, stdout %q", res.ID, res.Stdout[:100])
	}

	resume := func() {
		t.Helper()
		session.Crash(s)
		s.Close()
		d, err := session.OpenStateDir(root, dir.ID)
		must(t, err)
		s, _, err = session.Resume(context.Background(), w, opts(d))
		must(t, err)
	}
	resume()
	defer func() { s.Close() }()
	out, err := s.RunOutput("run-1", "stdout")
	if err != nil || out != "# p\n"+long {
		t.Fatalf("run_output run-1 after a restart: %v, %d bytes, want %d", err, len(out), len("# p\n"+long))
	}
	if out, err := s.RunOutput("run-1", "stderr"); err != nil || out != "oops\n" {
		t.Fatalf("stderr after a restart: %q %v", out, err)
	}
	for i := 2; i <= 10; i++ {
		res, err := s.Run(context.Background(), session.RunArgs{Command: fmt.Sprintf("echo %d", i)}, nil)
		must(t, err)
		if want := fmt.Sprintf("run-%d", i); res.ID != want {
			t.Fatalf("run %d is named %s", i, res.ID)
		}
		if i == 6 {
			resume()
		}
	}
	resume()
	for i := 1; i <= 10; i++ {
		out, err := s.RunOutput(fmt.Sprintf("run-%d", i), "")
		switch {
		case i <= 2 && (err == nil || !strings.Contains(err.Error(), "run-3, run-4")):
			t.Errorf("run-%d, no longer kept: %q %v", i, out, err)
		case i > 2 && (err != nil || out != fmt.Sprintf("%d\n", i)):
			t.Errorf("run-%d: %q %v", i, out, err)
		}
	}
	files, _ := os.ReadDir(filepath.Join(dir.Path, "runs"))
	if len(files) != 8 {
		t.Errorf("%d run files in the state directory, want the newest 8", len(files))
	}
}
