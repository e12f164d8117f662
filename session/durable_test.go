package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
)

// durable is a durable session over a repository, with what it takes to
// kill it and bring it back.
type durable struct {
	root, repo, ledgerPath string
	w                      *worker.Worker
	policy                 approval.Policy
	wrap                   func(targets.Target) targets.Target
	warn                   func(string) // the operator's warnings (Options.Warn)
	s                      *session.Session
	gate                   *approval.Gate
	l                      *ledger.Ledger
	id                     string
}

func newDurable(t testing.TB, repoPath string, policy approval.Policy, wrap func(targets.Target) targets.Target) *durable {
	t.Helper()
	typ := "local"
	if strings.HasSuffix(repoPath, ".git") {
		typ = "local-bare"
	}
	d := newDurableWorker(t, &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: typ, Path: repoPath, Branch: "main"}, Targets: map[string]*worker.TargetSpec{},
		AutoPull: []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: typ, Path: repoPath, Branch: "main"}}},
	}, policy, wrap)
	d.repo = repoPath
	return d
}

// newDurableWorker is newDurable for any worker.
func newDurableWorker(t testing.TB, w *worker.Worker, policy approval.Policy, wrap func(targets.Target) targets.Target) *durable {
	t.Helper()
	d := &durable{root: t.TempDir(), ledgerPath: filepath.Join(t.TempDir(), "ledger.jsonl"), policy: policy, wrap: wrap, w: w}
	dir, err := session.CreateStateDir(d.root, session.Meta{Worker: "tester", WorkerKey: "test"})
	if err != nil {
		t.Fatal(err)
	}
	d.id = dir.ID
	s, err := session.New(context.Background(), d.w, d.options(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	d.s = s
	t.Cleanup(func() {
		if d.s != nil {
			d.s.Close()
		}
	})
	return d
}

func (d *durable) options(t testing.TB, dir *session.StateDir) session.Options {
	t.Helper()
	l, err := ledger.Open(d.ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	d.l = l
	d.gate = approval.NewGate(l, d.policy)
	opts := session.Options{Gate: d.gate, Timeout: 200 * time.Millisecond, State: dir,
		Warn: func(m string) {
			if d.warn != nil {
				d.warn(m)
			}
		}}
	if d.wrap != nil {
		opts.OpenTarget = func(ctx context.Context, spec *worker.TargetSpec) (targets.Target, error) {
			t, err := session.OpenTarget(ctx, spec)
			if err != nil {
				return nil, err
			}
			return d.wrap(t), nil
		}
	}
	return opts
}

// crash kills the session as SIGKILL would, and resumes it.
func (d *durable) crashAndResume(t *testing.T) *session.Recovered {
	t.Helper()
	session.Crash(d.s)
	d.l.Close()
	d.s = nil
	dir, err := session.OpenStateDir(d.root, d.id)
	if err != nil {
		t.Fatal(err)
	}
	s, rec, err := session.Resume(context.Background(), d.w, d.options(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	d.s = s
	return rec
}

// picture is everything a worker can observe of a session.
type picture struct {
	files       map[string]string // path -> mode and content; directories too
	changes     string
	staged      string
	cps         string
	live, usage memfs.Usage
}

func look(t *testing.T, s *session.Session) picture {
	t.Helper()
	p := picture{files: map[string]string{}}
	fsys := s.Workspace().FS()
	err := fs.WalkDir(fsys, ".", func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := de.Info()
		switch {
		case de.IsDir():
			p.files[path] = fmt.Sprintf("dir %o", info.Mode().Perm())
		case de.Type()&fs.ModeSymlink != 0:
			target, _ := s.Workspace().Readlink(path)
			p.files[path] = "link " + target
		default:
			data, err := s.Workspace().ReadFile(path)
			if err != nil {
				return err
			}
			p.files[path] = fmt.Sprintf("%o %s", info.Mode().Perm(), data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := s.Status()
	p.changes = fmt.Sprint(st.Unstaged)
	var staged []string
	for _, c := range st.Staged {
		staged = append(staged, fmt.Sprintf("%s %q %v", c.ID, c.Message, c.Files))
	}
	p.staged = strings.Join(staged, "\n")
	var cps []string
	for _, cp := range s.Checkpoints() {
		cps = append(cps, fmt.Sprintf("%s@%s changed=%d", cp.Name, cp.Time.Format(time.RFC3339Nano), cp.Changed))
	}
	p.cps = strings.Join(cps, ",")
	p.live, p.usage = s.Workspace().ExactUsage()
	return p
}

func samePicture(t *testing.T, what string, got, want picture) {
	t.Helper()
	if fmt.Sprint(sortedMap(got.files)) != fmt.Sprint(sortedMap(want.files)) {
		t.Errorf("%s: files differ:\n got %v\nwant %v", what, sortedMap(got.files), sortedMap(want.files))
	}
	if got.changes != want.changes {
		t.Errorf("%s: unstaged changes differ:\n got %s\nwant %s", what, got.changes, want.changes)
	}
	if got.staged != want.staged {
		t.Errorf("%s: staged commits differ:\n got %s\nwant %s", what, got.staged, want.staged)
	}
	if got.cps != want.cps {
		t.Errorf("%s: checkpoints differ:\n got %s\nwant %s", what, got.cps, want.cps)
	}
	// Resuming shares versions of one file with equal content, so what
	// is held may shrink, never grow.
	if got.live != want.live || got.usage.Bytes > want.usage.Bytes || got.usage.Files > want.usage.Files {
		t.Errorf("%s: the workspace holds %+v (live %+v), before %+v (live %+v)", what, got.usage, got.live, want.usage, want.live)
	}
}

func sortedMap(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// TestResumeRestoresEverything kills a session after each kind of change
// and resumes it: files, directories, modes, symlinks, unstaged changes,
// staged commits and checkpoints are as the last call left them, the held
// tally too, and the resumed session goes on working: rollback, stage,
// push.
func TestResumeRestoresEverything(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n", "keep/k.txt": "k\n"})
	d := newDurable(t, bare, approval.Policy{AutoApprove: []string{"local-bare:" + bare}}, nil)
	ws := func() *memfs.Workspace { return d.s.Workspace() }
	var atCp2 picture
	steps := []struct {
		name string
		do   func() error
	}{
		{"write", func() error { return ws().WriteFile("c.txt", []byte("c\n"), 0o644) }},
		{"edit", func() error { return ws().WriteFile("a.txt", []byte("a edited\n"), 0o644) }},
		{"mkdir", func() error { return ws().MkdirAll("empty/inner", 0o755) }},
		{"checkpoint", func() error { _, err := d.s.Checkpoint("cp1"); return err }},
		{"exec", func() error {
			if err := ws().WriteFile("run.sh", []byte("#!/bin/sh\n"), 0o755); err != nil {
				return err
			}
			return ws().Chmod("run.sh", 0o755)
		}},
		{"symlink", func() error { return ws().Symlink("a.txt", "link") }},
		{"stage", func() error { _, err := d.s.Stage(nil, "first"); return err }},
		{"after stage", func() error { return ws().WriteFile("d.txt", []byte("d\n"), 0o644) }},
		{"checkpoint 2", func() error {
			_, err := d.s.Checkpoint("cp2")
			atCp2 = look(t, d.s)
			return err
		}},
		{"delete", func() error { return ws().Remove("dir/b.txt") }},
		{"rename", func() error { return ws().Rename("c.txt", "moved/c.txt") }},
		{"stage 2", func() error { _, err := d.s.Stage([]string{"dir"}, "second"); return err }},
		{"rollback", func() error { _, err := d.s.Rollback("cp2"); return err }},
		{"big", func() error { return ws().WriteFile("big.bin", make([]byte, 3<<20), 0o644) }},
		{"discard", func() error { _, err := d.s.Discard("", true); return err }},
		{"stage 3", func() error { _, err := d.s.Stage(nil, "third"); return err }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		must(t, d.s.Save())
		want := look(t, d.s)
		d.crashAndResume(t)
		samePicture(t, "after "+st.name, look(t, d.s), want)
		if t.Failed() {
			t.FailNow()
		}
	}
	// The resumed session works as the first one would.
	if _, err := d.s.Rollback("cp2"); err != nil {
		t.Fatal(err)
	}
	got := look(t, d.s)
	if fmt.Sprint(sortedMap(got.files)) != fmt.Sprint(sortedMap(atCp2.files)) {
		t.Fatalf("rollback after resume: %v, want %v", sortedMap(got.files), sortedMap(atCp2.files))
	}
	must(t, d.s.Save())
	d.crashAndResume(t)
	must(t, ws().WriteFile("final.txt", []byte("f\n"), 0o644))
	c, err := d.s.Stage(nil, "final")
	must(t, err)
	res, err := d.s.Push(context.Background(), c.ID.String(), "", nil)
	must(t, err)
	if res.Commit != c.ID {
		t.Fatalf("push result %+v", res)
	}
	if head := strings.TrimSpace(git(t, bare, "rev-parse", "main")); head != c.ID.String() {
		t.Fatalf("target at %s, want %s", head, c.ID)
	}
	show := git(t, bare, "show", "--stat", "--format=%s", "main")
	if !strings.Contains(show, "final.txt") {
		t.Fatalf("the pushed commit: %s", show)
	}
	// Ledger intact across the kills.
	if _, err := ledger.Verify(d.ledgerPath); err != nil {
		t.Fatal(err)
	}
}

// TestTornLastBatch cuts the journal inside the last call's batch, at
// every tenth byte: the session resumes as the call before it left it.
func TestTornLastBatch(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	d := newDurable(t, bare, approval.Policy{}, nil)
	must(t, d.s.Workspace().WriteFile("one.txt", []byte("1\n"), 0o644))
	must(t, d.s.Save())
	_, err := d.s.Checkpoint("c")
	must(t, err)
	must(t, d.s.Save())
	want := look(t, d.s)
	dir, _ := d.s.Durable()
	jpath := filepath.Join(dir.Where(), "journal")
	before, err := os.ReadFile(jpath)
	must(t, err)
	must(t, d.s.Workspace().WriteFile("two.txt", []byte(strings.Repeat("2", 5000)), 0o644))
	_, err = d.s.Stage(nil, "staged")
	must(t, err)
	must(t, d.s.Save())
	session.Crash(d.s)
	d.l.Close()
	d.s = nil
	after, err := os.ReadFile(jpath)
	must(t, err)
	if len(after) <= len(before) || string(after[:len(before)]) != string(before) {
		t.Fatalf("the last batch did not append (%d -> %d bytes)", len(before), len(after))
	}
	for cut := len(before); cut < len(after); cut += 10 {
		must(t, os.WriteFile(jpath, after[:cut], 0o600))
		dir, err := session.OpenStateDir(d.root, d.id)
		must(t, err)
		s, _, err := session.Resume(context.Background(), d.w, d.options(t, dir))
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		samePicture(t, fmt.Sprintf("cut at %d", cut), look(t, s), want)
		session.Crash(s)
		d.l.Close()
		if t.Failed() {
			t.FailNow()
		}
	}
}

// TestPendingPushOfferedAgain: a push waiting for a reviewer when the
// server dies is offered again after the restart under the same request
// id, and approving it pushes.
func TestPendingPushOfferedAgain(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	d := newDurable(t, bare, approval.Policy{}, nil)
	must(t, d.s.Workspace().WriteFile("new.txt", []byte("new\n"), 0o644))
	c, err := d.s.Stage(nil, "add new")
	must(t, err)
	res, err := d.s.Push(context.Background(), c.ID.String(), "", nil)
	must(t, err)
	if !res.Pending {
		t.Fatalf("push did not wait: %+v", res)
	}
	must(t, d.s.Save())
	rec := d.crashAndResume(t)
	if len(rec.Waiting) != 1 || rec.Waiting[0] != res.RequestID {
		t.Fatalf("recovered %+v, want request %s waiting", rec, res.RequestID)
	}
	if !strings.Contains(rec.Text(), res.RequestID) {
		t.Fatalf("the worker is not told: %s", rec.Text())
	}
	pend := waitPending(t, d.gate, 1)
	if pend[0].ID != res.RequestID || pend[0].New != c.ID {
		t.Fatalf("offered %s for %s, want %s for %s", pend[0].ID, pend[0].New, res.RequestID, c.ID)
	}
	if _, err := d.gate.Resolve(approval.Decision{Request: res.RequestID, Verdict: approval.Approve, By: "tester"}); err != nil {
		t.Fatal(err)
	}
	res2, err := d.s.Push(context.Background(), c.ID.String(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Pending || res2.Commit != c.ID {
		t.Fatalf("after approval: %+v", res2)
	}
	if head := strings.TrimSpace(git(t, bare, "rev-parse", "main")); head != c.ID.String() {
		t.Fatalf("target at %s, want %s", head, c.ID)
	}
	if _, err := ledger.Verify(d.ledgerPath); err != nil {
		t.Fatal(err)
	}
}

// TestAdvancedCommitsResume: pushing the first of two staged commits gives
// the second a new base under the same id; after a restart the second is
// still on that base, and pushes without a rebase.
func TestAdvancedCommitsResume(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	d := newDurable(t, bare, approval.Policy{AutoApprove: []string{"local-bare:" + bare}}, nil)
	must(t, d.s.Workspace().WriteFile("one.txt", []byte("1\n"), 0o644))
	c1, err := d.s.Stage(nil, "one")
	must(t, err)
	must(t, d.s.Workspace().WriteFile("two.txt", []byte("2\n"), 0o644))
	c2, err := d.s.Stage(nil, "two")
	must(t, err)
	_, err = d.s.Push(context.Background(), c1.ID.String(), "", nil)
	must(t, err)
	must(t, d.s.Save())
	d.crashAndResume(t)
	c, err := d.s.Lookup(c2.ID.String())
	must(t, err)
	if c.Base != c1.ID {
		t.Fatalf("after the restart %s stands on %s, want %s (pushed)", c.ID, c.Base, c1.ID)
	}
	res, err := d.s.Push(context.Background(), c2.ID.String(), "", nil)
	must(t, err)
	if res.Commit != c2.ID || len(res.Notes) > 0 {
		t.Fatalf("pushing the second commit: %+v", res)
	}
	if head := strings.TrimSpace(git(t, bare, "rev-parse", "main")); head != c2.ID.String() {
		t.Fatalf("target at %s, want %s", head, c2.ID)
	}
}

// TestWaitingPushSavedBeforeAnswer: a push is saved as soon as it is
// asked, not when its call answers: a server killed while git_push waits
// for the reviewer (minutes) offers the request again under its id.
func TestWaitingPushSavedBeforeAnswer(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	d := newDurable(t, bare, approval.Policy{}, nil)
	must(t, d.s.Workspace().WriteFile("new.txt", []byte("new\n"), 0o644))
	c, err := d.s.Stage(nil, "add new")
	must(t, err)
	must(t, d.s.Save())
	go d.s.Push(context.Background(), c.ID.String(), "", nil)
	id := waitPending(t, d.gate, 1)[0].ID
	rec := d.crashAndResume(t) // with no Save after the push: its call never answered
	if len(rec.Waiting) != 1 || rec.Waiting[0] != id {
		t.Fatalf("recovered %+v, want request %s waiting", rec, id)
	}
	if pend := waitPending(t, d.gate, 1); pend[0].ID != id {
		t.Fatalf("offered %s, want %s", pend[0].ID, id)
	}
}

// stallTarget pushes (or not) and then never returns, as a process killed
// in the middle of a push would.
type stallTarget struct {
	targets.Target
	land    bool
	stalled chan struct{}
	once    sync.Once
}

func (s *stallTarget) Push(ctx context.Context, g approval.Grant, store *staging.Store) error {
	if s.land {
		s.Target.Push(ctx, g, store)
	}
	s.once.Do(func() { close(s.stalled) })
	<-ctx.Done() // never, for the push's context: a killed process never returns
	return ctx.Err()
}

// cutWhileLanding is a durable session whose auto-approved push stalls
// in the target, after pushing (land) or before, as a process killed
// there would; the next target opened pushes normally.
func cutWhileLanding(t *testing.T, land bool) *durable {
	t.Helper()
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	stall := &stallTarget{land: land, stalled: make(chan struct{})}
	first := true
	d := newDurable(t, bare, approval.Policy{AutoApprove: []string{"local-bare:" + bare}}, func(tg targets.Target) targets.Target {
		if first {
			first = false
			stall.Target = tg
			return stall
		}
		return tg
	})
	must(t, d.s.Workspace().WriteFile("new.txt", []byte("new\n"), 0o644))
	c, err := d.s.Stage(nil, "add new")
	must(t, err)
	go d.s.Push(context.Background(), c.ID.String(), "", nil)
	<-stall.stalled
	d.wrap = nil
	return d
}

// TestLandingPushAfterCrash: a push cut by the crash while landing is
// recorded as pushed when its branch has the commit; otherwise its
// approval stands (a decision in the ledger is final) and it lands after
// the resume, nobody asked again.
func TestLandingPushAfterCrash(t *testing.T) {
	for _, land := range []bool{true, false} {
		t.Run(fmt.Sprintf("landed=%v", land), func(t *testing.T) {
			d := cutWhileLanding(t, land)
			rec := d.crashAndResume(t)
			var recs []ledger.Record
			var last string
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				var err error
				recs, err = ledger.Records(d.ledgerPath)
				must(t, err)
				for _, r := range recs {
					if r.Kind == ledger.KindPush {
						last = string(r.Data)
					}
				}
				if d.s.Status().Staged == nil && strings.Contains(last, `"result":"pushed"`) || time.Now().After(deadline) {
					break
				}
			}
			decisions := 0
			for _, r := range recs {
				if r.Kind == ledger.KindDecision {
					decisions++
				}
			}
			if st := d.s.Status(); !strings.Contains(last, `"result":"pushed"`) || len(st.Staged) != 0 || decisions != 1 {
				t.Fatalf("landed=%v: ledger %s, staged %d, %d decisions", land, last, len(st.Staged), decisions)
			}
			if len(rec.Ended) != 1 {
				t.Fatalf("recovered %+v", rec)
			}
			if _, err := ledger.Verify(d.ledgerPath); err != nil {
				t.Fatal(err)
			}
			// A push found landed keeps the ledger's head in its target,
			// as one that answered would have.
			tgt, err := targets.OpenForLedger(context.Background(), "local-bare:"+d.repo, targets.GitHubOptions{})
			must(t, err)
			host, path := targets.LedgerAt(d.ledgerPath)
			// Kept once the push landed, before it ends.
			kept, ok, err := tgt.ReadLedgerHead(context.Background(), host, path)
			for deadline := time.Now().Add(10 * time.Second); err == nil && !ok && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				kept, ok, err = tgt.ReadLedgerHead(context.Background(), host, path)
			}
			must(t, err)
			if !ok || kept.Seq != recs[len(recs)-1].Seq || kept.Hash != recs[len(recs)-1].Hash {
				t.Fatalf("after the push landed, the target keeps %+v (%v); the ledger ends at %d", kept, ok, recs[len(recs)-1].Seq)
			}
		})
	}
}

// TestStateDirs: a session is locked while open, listed with its counts,
// found as its worker's latest unfinished one, and removed when asked.
func TestStateDirs(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	d := newDurable(t, bare, approval.Policy{}, nil)
	if _, err := session.OpenStateDir(d.root, d.id); !errors.Is(err, session.ErrSessionBusy) {
		t.Fatalf("a second opener got %v, want busy", err)
	}
	must(t, d.s.Workspace().WriteFile("x.txt", []byte("x"), 0o644))
	must(t, d.s.Save())
	d.s.Close()
	d.s = nil
	d.l.Close()
	list, err := session.ListSessions(session.Local(d.root))
	must(t, err)
	if len(list) != 1 || list[0].Changed != 1 || !list[0].Closed || list[0].Running {
		t.Fatalf("listed %+v", list)
	}
	dir, _, err := session.LatestUnfinished(session.Local(d.root), "test", session.Binding{})
	must(t, err)
	if dir == nil || dir.SessionID() != d.id {
		t.Fatalf("latest unfinished: %+v", dir)
	}
	if got := session.Sweep(session.Local(d.root), 0); len(got) != 0 {
		t.Fatalf("swept unfinished or open sessions: %v", got)
	}
	dir.Unlock()
	if got := session.Sweep(session.Local(d.root), 0); len(got) != 0 {
		t.Fatalf("swept an unfinished session: %v", got)
	}
	if _, err := session.OpenStateDir(d.root, "../x"); !errors.Is(err, session.ErrNoSession) {
		t.Fatalf("a path as id: %v", err)
	}
	must(t, session.Local(d.root).Remove(d.id))
	if list, _ := session.ListSessions(session.Local(d.root)); len(list) != 0 {
		t.Fatalf("after rm: %+v", list)
	}
}

// TestJournalStaysBounded: rewriting a 1 MiB file forty times under a
// 4 MiB quota leaves a journal of a few MiB, not 40: the state directory
// is held to the quota as the memory is.
func TestJournalStaysBounded(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	d := newDurable(t, bare, approval.Policy{}, nil)
	lim := d.s.Workspace().Limits().MaxTotalBytes
	for i := 0; i < 40; i++ {
		data := bytes.Repeat([]byte{byte('a' + i%26)}, 1<<20)
		must(t, d.s.Workspace().WriteFile("big.bin", data, 0o644))
		must(t, d.s.Save())
	}
	dir, _ := d.s.Durable()
	fi, err := os.Stat(filepath.Join(dir.Where(), "journal"))
	must(t, err)
	if max := min(lim, 8<<20) + 4<<20; fi.Size() > max {
		t.Fatalf("the journal holds %d bytes after 40 MiB of rewrites (quota %d)", fi.Size(), lim)
	}
	want := look(t, d.s)
	d.crashAndResume(t)
	samePicture(t, "after compactions", look(t, d.s), want)
}

// TestSweepRemovesFinishedSessions: a session whose work all left is
// removed once the retention time has passed, an unfinished one never.
func TestSweepRemovesFinishedSessions(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	done := newDurable(t, bare, approval.Policy{AutoApprove: []string{"local-bare:" + bare}}, nil)
	must(t, done.s.Workspace().WriteFile("x.txt", []byte("x\n"), 0o644))
	c, err := done.s.Stage(nil, "x")
	must(t, err)
	_, err = done.s.Push(context.Background(), c.ID.String(), "", nil)
	must(t, err)
	done.s.Close()
	done.s = nil
	wip, err := session.CreateStateDir(done.root, session.Meta{Worker: "tester", WorkerKey: "test"})
	must(t, err)
	wip.Unlock()
	if got := session.Sweep(session.Local(done.root), time.Hour); len(got) != 0 {
		t.Fatalf("swept within the retention time: %v", got)
	}
	got := session.Sweep(session.Local(done.root), 0)
	sort.Strings(got)
	want := []string{done.id, wip.ID}
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("swept %v, want the pushed session and the one that never saved: %v", got, want)
	}
}

// TestKilledSessionFoundAgain: a server killed within a second of a change
// (before its summary's timer writes it) leaves a session that is still
// found as its worker's latest unfinished one: first just after the
// session started, then after its work had all left and new work came.
func TestKilledSessionFoundAgain(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	d := newDurable(t, bare, approval.Policy{AutoApprove: []string{"local-bare:" + bare}}, nil)
	found := func(what string, want bool) {
		t.Helper()
		session.Crash(d.s)
		d.l.Close()
		d.s = nil
		dir, _, err := session.LatestUnfinished(session.Local(d.root), "test", session.Binding{})
		must(t, err)
		if got := dir != nil && dir.SessionID() == d.id; got != want {
			t.Fatalf("%s: found %v, want %v", what, got, want)
		}
		if dir == nil {
			if dir, err = session.Local(d.root).Open(d.id); err != nil {
				t.Fatal(err)
			}
		}
		s, _, err := session.Resume(context.Background(), d.w, d.options(t, dir.(*session.StateDir)))
		must(t, err)
		d.s = s
	}
	must(t, d.s.Workspace().WriteFile("x.txt", []byte("x"), 0o644))
	must(t, d.s.Save())
	found("a change in the first second", true)

	c, err := d.s.Stage(nil, "x")
	must(t, err)
	_, err = d.s.Push(context.Background(), c.ID.String(), "", nil)
	must(t, err)
	must(t, d.s.Save())
	found("all work pushed", false)

	must(t, d.s.Workspace().WriteFile("y.txt", []byte("y"), 0o644))
	must(t, d.s.Save())
	found("a change after all work left", true)
}

// TestLazyBaseResumes: a session whose base was never read resumes with
// its files still lazy (the journal holds the trees, not the content) and
// reads them from the repository; a repository gone since the crash is
// named in the recovery, and a read says to pull again.
func TestLazyBaseResumes(t *testing.T) {
	files := map[string]string{}
	for i := 0; i < 50; i++ {
		files[fmt.Sprintf("d/f%02d.txt", i)] = strings.Repeat(fmt.Sprintf("content of %d\n", i), 2000)
	}
	bare := repo(t, true, files)
	d := newDurable(t, bare, approval.Policy{}, nil)
	must(t, d.s.Workspace().Rename("d/f01.txt", "moved.txt"))
	must(t, d.s.Save())
	fi, err := os.Stat(filepath.Join(d.root, d.id, "journal"))
	must(t, err)
	if fi.Size() > 100<<10 {
		t.Fatalf("the journal holds %d bytes for a base of %d files never read", fi.Size(), len(files))
	}
	rec := d.crashAndResume(t)
	if len(rec.Ended) != 0 {
		t.Fatalf("recovery notes: %v", rec.Ended)
	}
	for _, p := range []string{"d/f07.txt", "moved.txt"} {
		want := files[p]
		if p == "moved.txt" {
			want = files["d/f01.txt"]
		}
		got, err := d.s.Workspace().ReadFile(p)
		if err != nil || string(got) != want {
			t.Fatalf("%s after the resume: %v", p, err)
		}
	}
	// The repository goes away; the next resume says so, and a file not
	// yet read cannot be.
	must(t, os.Rename(bare, bare+".gone"))
	rec = d.crashAndResume(t)
	if len(rec.Ended) != 1 || !strings.Contains(rec.Ended[0], "git_pull") {
		t.Fatalf("recovery notes with the repository gone: %v", rec.Ended)
	}
	if _, err := d.s.Workspace().ReadFile("d/f09.txt"); !errors.Is(err, memfs.ErrUnavailable) || !strings.Contains(err.Error(), "git_pull") {
		t.Fatalf("reading a file of a gone repository: %v", err)
	}
	must(t, os.Rename(bare+".gone", bare))
}
