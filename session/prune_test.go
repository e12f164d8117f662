package session_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

// startIn starts a new durable session of a worker pulling bare under
// root, dropped at its close if it changed nothing when drop is set.
func startIn(t *testing.T, root, bare string, drop bool) *session.Session {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	must(t, err)
	t.Cleanup(func() { l.Close() })
	dir, err := session.CreateStateDir(root, session.Meta{Worker: "tester", WorkerKey: "test"})
	must(t, err)
	spec := &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}
	w := &worker.Worker{Name: "tester", Author: worker.Person{Name: "T", Email: "t@example.com"},
		DefaultTarget: spec, Targets: map[string]*worker.TargetSpec{}, AutoPull: []worker.PullSpec{{Path: ".", Source: spec}}}
	s, err := session.New(context.Background(), w, session.Options{Gate: approval.NewGate(l, approval.Policy{AutoApprove: []string{"local-bare:" + bare}}),
		State: dir, DropUnchanged: drop})
	must(t, err)
	t.Cleanup(s.Close)
	return s
}

// A session that changed nothing is not kept: reading, listing, status
// and diffs leave no directory behind. Anything saved after the start
// (even undone since), a resumed session, or a server that does not ask
// for it, keeps it.
func TestUnchangedSessionNotKept(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n"})
	for _, c := range []struct {
		name string
		drop bool
		work func(t *testing.T, s *session.Session)
		kept bool
	}{
		{"only reads", true, func(t *testing.T, s *session.Session) {
			if _, err := s.Workspace().ReadFile("d/b.txt"); err != nil {
				t.Fatal(err)
			}
			s.Status()
			s.Diff("")
		}, false},
		{"a file written", true, func(t *testing.T, s *session.Session) {
			must(t, s.Workspace().WriteFile("x.txt", []byte("x"), 0o644))
		}, true},
		{"a file written and deleted again", true, func(t *testing.T, s *session.Session) {
			must(t, s.Workspace().WriteFile("x.txt", []byte("x"), 0o644))
			must(t, s.Save())
			must(t, s.Workspace().Remove("x.txt"))
		}, true},
		{"a checkpoint", true, func(t *testing.T, s *session.Session) {
			_, err := s.Checkpoint("cp")
			must(t, err)
		}, true},
		{"a push", true, func(t *testing.T, s *session.Session) {
			must(t, s.Workspace().WriteFile("x.txt", []byte("x"), 0o644))
			_, err := s.Stage(nil, "x")
			must(t, err)
			_, err = s.Push(context.Background(), "", "", nil)
			must(t, err)
		}, true},
		{"not asked to drop", false, func(*testing.T, *session.Session) {}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			s := startIn(t, root, bare, c.drop)
			dir, _ := s.Durable()
			c.work(t, s)
			must(t, s.Save())
			s.Close()
			_, err := os.Stat(dir.Where())
			if kept := err == nil; kept != c.kept || s.Dropped() == c.kept {
				t.Fatalf("kept %v (%v), dropped %v; want kept %v", kept, err, s.Dropped(), c.kept)
			}
			if !c.kept {
				if list, _ := session.ListSessions(session.Local(root)); len(list) != 0 {
					t.Fatalf("listed after the drop: %+v", list)
				}
			}
		})
	}

	// A resumed session that changes nothing is kept: it holds what the
	// session before it did.
	root := t.TempDir()
	s := startIn(t, root, bare, true)
	must(t, s.Workspace().WriteFile("x.txt", []byte("x"), 0o644))
	must(t, s.Save())
	dir, _ := s.Durable()
	s.Close()
	d, err := session.OpenStateDir(root, dir.SessionID())
	must(t, err)
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	must(t, err)
	defer l.Close()
	r, _, err := session.Resume(context.Background(), s.Worker(), session.Options{Gate: approval.NewGate(l, approval.Policy{}), State: d, DropUnchanged: true})
	must(t, err)
	r.Close()
	if _, err := os.Stat(dir.Where()); err != nil || r.Dropped() {
		t.Fatalf("a resumed session was dropped: %v", err)
	}
}

// Prune removes sessions by age whose work all left; never one a running
// server holds, nor, unless forced, one with work that has not left; a
// dry run removes nothing and says the same.
func TestPrune(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	root := t.TempDir()
	ids := map[string]string{}
	finish := func(name string, work func(s *session.Session), open bool) {
		s := startIn(t, root, bare, false)
		work(s)
		must(t, s.Save())
		dir, _ := s.Durable()
		ids[name] = dir.SessionID()
		if !open {
			s.Close()
		}
	}
	finish("pushed", func(s *session.Session) {
		must(t, s.Workspace().WriteFile("x.txt", []byte("x"), 0o644))
		_, err := s.Stage(nil, "x")
		must(t, err)
		_, err = s.Push(context.Background(), "", "", nil)
		must(t, err)
	}, false)
	finish("empty", func(*session.Session) {}, false)
	finish("changed", func(s *session.Session) { must(t, s.Workspace().WriteFile("y.txt", []byte("y"), 0o644)) }, false)
	finish("staged", func(s *session.Session) {
		must(t, s.Workspace().WriteFile("z.txt", []byte("z"), 0o644))
		_, err := s.Stage(nil, "z")
		must(t, err)
	}, false)
	finish("running", func(*session.Session) {}, true)

	names := func(ls []session.Listed) string {
		var out []string
		for _, l := range ls {
			for n, id := range ids {
				if id == l.ID {
					out = append(out, n)
				}
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	res, err := session.Prune(session.Local(root), session.PruneOptions{OlderThan: time.Hour})
	must(t, err)
	if len(res.Removed) != 0 || res.Recent != 5 {
		t.Fatalf("within the age: removed %s, %d recent", names(res.Removed), res.Recent)
	}
	res, err = session.Prune(session.Local(root), session.PruneOptions{DryRun: true})
	must(t, err)
	if names(res.Removed) != "empty pushed" || names(res.Unfinished) != "changed staged" || names(res.Running) != "running" {
		t.Fatalf("dry run: removed %q, unfinished %q, running %q", names(res.Removed), names(res.Unfinished), names(res.Running))
	}
	if list, _ := session.ListSessions(session.Local(root)); len(list) != 5 {
		t.Fatalf("a dry run removed sessions: %d left", len(list))
	}
	res, err = session.Prune(session.Local(root), session.PruneOptions{})
	must(t, err)
	if names(res.Removed) != "empty pushed" {
		t.Fatalf("removed %q", names(res.Removed))
	}
	res, err = session.Prune(session.Local(root), session.PruneOptions{Force: true})
	must(t, err)
	if names(res.Removed) != "changed staged" || names(res.Running) != "running" {
		t.Fatalf("forced: removed %q, running %q", names(res.Removed), names(res.Running))
	}
	for n, id := range ids {
		_, err := os.Stat(filepath.Join(root, id))
		if gone := errors.Is(err, fs.ErrNotExist); gone == (n == "running") {
			t.Errorf("%s: gone %v", n, gone)
		}
	}
}
