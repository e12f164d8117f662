// Package recoverytest is the recovery conformance suite: a session saved
// through a store (store.Store) and resumed from it comes back whole (its
// workspace, staged commits, checkpoints and pushes waiting for a
// reviewer), after a crash at each record boundary: the process killed
// after any batch the store took, with nothing of the next. Every store
// runs it (package session's tests run it over the local files).
package recoverytest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/worker"
)

// Suite runs the scenario once whole, noting what the worker could see
// after each step and how many batches the store had taken by then; then
// once per batch boundary, the store taking no batch after it, the
// session killed and resumed: it must be as the last step with a batch
// that landed left it.
func Suite(t *testing.T, newStore func(t *testing.T) store.Store) {
	bare := bareRepo(t)
	full := run(t, newStore(t), bare, -1)
	total := full.steps[len(full.steps)-1].batches
	if total < len(full.steps) || full.c.rewrites < 2 {
		t.Fatalf("the scenario wrote %d batches in %d steps, %d of them rewrites: it is to have a call's batch and a rewrite after it", total, len(full.steps), full.c.rewrites)
	}
	// The whole run resumes whole.
	samePicture(t, "after the whole scenario", full.resume(t), full.steps[len(full.steps)-1].pic)
	for k := 1; k <= total; k++ {
		r := run(t, newStore(t), bare, k)
		// A step's first batch holds all it did (a rewrite after it
		// holds the same): the step is kept once that one landed.
		want := full.steps[0]
		for i, st := range full.steps[1:] {
			if before := full.steps[i].batches; st.batches > before && before < k {
				want = st
			}
		}
		for i, st := range r.steps {
			if st.batches < k && st.batches != full.steps[i].batches {
				t.Fatalf("the scenario is not the same twice: after step %q, %d batches, then %d", st.name, full.steps[i].batches, st.batches)
			}
		}
		samePicture(t, fmt.Sprintf("killed after batch %d of %d (after step %q)", k, total, want.name), r.resume(t), want.pic)
		if t.Failed() {
			t.FailNow()
		}
	}
}

// bareRepo is the target: a bare repository with one commit, its dates
// fixed, so that every run's commits have the same ids.
func bareRepo(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
	t.Setenv("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
	gittest.Git(t, dir, "init", "-q", "-b", "main", ".")
	for p, c := range map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n", "keep/k.txt": "k\n"} {
		must(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644))
	}
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-qm", "init")
	bare := filepath.Join(t.TempDir(), "bare.git")
	gittest.Git(t, dir, "clone", "-q", "--bare", dir, bare)
	return bare
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// step is what the worker could see after a step of the scenario.
type step struct {
	name    string
	batches int // the store had taken this many batches
	pic     picture
}

// runner is one run of the scenario.
type runner struct {
	st         store.Store
	w          *worker.Worker
	ledgerPath string
	id         string
	clock      *clock
	s          *session.Session
	gate       *approval.Gate
	c          *counter
	steps      []step
}

// run plays the scenario through a store that takes only the first
// budget batches (all, when budget < 0), and kills the session after.
func run(t *testing.T, st store.Store, bare string, budget int) *runner {
	spec := &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}
	r := &runner{st: st, ledgerPath: filepath.Join(t.TempDir(), "ledger.jsonl"), clock: &clock{}, w: &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: spec, Targets: map[string]*worker.TargetSpec{}, AutoPull: []worker.PullSpec{{Path: ".", Source: spec}},
	}}
	c := &counter{budget: budget}
	r.c = c
	lease, err := st.Create(store.Meta{Worker: "tester", WorkerKey: "test"})
	must(t, err)
	r.id = lease.SessionID()
	opts, closeLedger := r.options(t, cutLease{lease, c})
	r.s, err = session.New(context.Background(), r.w, opts)
	must(t, err)
	r.note(t, "new", c)
	for _, sc := range scenario {
		r.clock.tick()
		if err := sc.do(r.s); err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		must(t, r.s.Save())
		r.note(t, sc.name, c)
	}
	kill(r.s, c)
	closeLedger()
	return r
}

// note records what the worker sees now.
func (r *runner) note(t *testing.T, name string, c *counter) {
	r.steps = append(r.steps, step{name: name, batches: c.taken(), pic: look(t, r.s, r.gate)})
}

// options are the session's: a gate that asks (nobody answers), the
// ledger, a push that waits for the reviewer no longer than a moment.
func (r *runner) options(t *testing.T, lease store.Lease) (session.Options, func()) {
	l, err := ledger.Open(r.ledgerPath)
	must(t, err)
	r.gate = approval.NewGate(l, approval.Policy{})
	opts := session.Options{Gate: r.gate, Timeout: time.Millisecond, State: lease, Now: r.clock.now, Warn: func(string) {}}
	return opts, func() { must(t, l.Close()) }
}

// resume takes the killed session up again from the store, and returns
// what the worker sees.
func (r *runner) resume(t *testing.T) picture {
	lease, err := r.st.Open(r.id)
	must(t, err)
	opts, closeLedger := r.options(t, lease)
	defer closeLedger()
	c := &counter{budget: -1}
	opts.State = cutLease{lease, c}
	s, _, err := session.Resume(context.Background(), r.w, opts)
	must(t, err)
	defer kill(s, c)
	return look(t, s, r.gate)
}

// scenario is every kind of change a worker makes, a push left waiting
// for its reviewer among them.
var scenario = []struct {
	name string
	do   func(*session.Session) error
}{
	{"write", func(s *session.Session) error { return s.Workspace().WriteFile("c.txt", []byte("c\n"), 0o644) }},
	{"edit", func(s *session.Session) error { return s.Workspace().WriteFile("a.txt", []byte("a edited\n"), 0o644) }},
	{"mkdir and link", func(s *session.Session) error {
		if err := s.Workspace().MkdirAll("empty/inner", 0o755); err != nil {
			return err
		}
		return s.Workspace().Symlink("a.txt", "link")
	}},
	{"checkpoint", func(s *session.Session) error { _, err := s.Checkpoint("cp1"); return err }},
	{"stage", func(s *session.Session) error { _, err := s.Stage(nil, "first"); return err }},
	{"push waiting", func(s *session.Session) error {
		st := s.Status()
		res, err := s.Push(context.Background(), st.Staged[0].ID.String(), "", nil)
		if err == nil && !res.Pending {
			err = fmt.Errorf("the push did not wait for its reviewer: %+v", res)
		}
		return err
	}},
	{"after stage", func(s *session.Session) error { return s.Workspace().WriteFile("d.txt", []byte("d\n"), 0o644) }},
	{"checkpoint 2", func(s *session.Session) error { _, err := s.Checkpoint("cp2"); return err }},
	{"delete and rename", func(s *session.Session) error {
		if err := s.Workspace().Remove("dir/b.txt"); err != nil {
			return err
		}
		return s.Workspace().Rename("c.txt", "moved/c.txt")
	}},
	{"stage 2", func(s *session.Session) error { _, err := s.Stage([]string{"dir"}, "second"); return err }},
	// Big enough that the journal is rewritten whole after its batch (a
	// boundary between a call's batch and the rewrite).
	{"big", func(s *session.Session) error {
		return s.Workspace().WriteFile("big.bin", make([]byte, 4<<20+256<<10), 0o644)
	}},
	{"rollback", func(s *session.Session) error { _, err := s.Rollback("cp2"); return err }},
	// The staged commit after the one waiting for its reviewer: the
	// waiting push stays (discarding it would end the push in its own
	// goroutine, a batch at no step's time).
	{"discard", func(s *session.Session) error {
		st := s.Status()
		_, err := s.Discard(st.Staged[len(st.Staged)-1].ID.String(), false)
		return err
	}},
	{"stage 3", func(s *session.Session) error {
		if err := s.Workspace().WriteFile("e.txt", []byte("e\n"), 0o644); err != nil {
			return err
		}
		_, err := s.Stage(nil, "third")
		return err
	}},
}

// kill ends s as a killed process would: nothing more reaches its store
// (its close saves and flushes into the void), and its hold is let go as
// the kernel lets a dead process's go.
func kill(s *session.Session, c *counter) {
	c.freeze()
	s.Close()
}

// clock is the sandbox's: a step's changes all happen at its time, the
// same in every run, so that commits and checkpoints have the same ids
// and times.
type clock struct {
	mu sync.Mutex
	at time.Time
}

func (c *clock) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		c.at = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	c.at = c.at.Add(time.Minute)
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return c.at
}

// counter is how many batches a store may still take.
type counter struct {
	mu       sync.Mutex
	budget   int // < 0: all
	n        int
	rewrites int // of the batches taken, rewrites of the whole journal
}

// take reports whether the next batch lands, and counts it.
func (c *counter) take() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.budget >= 0 && c.n >= c.budget {
		return false
	}
	c.n++
	return true
}

// freeze lets no more batches land.
func (c *counter) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget = c.n
}

func (c *counter) taken() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// cutLease is a lease whose journal takes no batch past its counter's
// budget: what a process killed after that batch left in the store.
type cutLease struct {
	store.Lease
	c *counter
}

func (l cutLease) OpenJournal(commit func(byte) bool, fn func(byte, []byte) error) (store.Journal, error) {
	j, err := l.Lease.OpenJournal(commit, fn)
	if err != nil {
		return nil, err
	}
	return cutJournal{j, l.c}, nil
}

type cutJournal struct {
	store.Journal
	c *counter
}

func (j cutJournal) Write(b *journal.Batch) error {
	if !j.c.take() {
		return nil // the process is dead: nothing reaches the store
	}
	return j.Journal.Write(b)
}

func (j cutJournal) RewriteWith(fill func(journal.Records) error) error {
	if !j.c.take() {
		return fill(discard{})
	}
	j.c.mu.Lock()
	j.c.rewrites++
	j.c.mu.Unlock()
	return j.Journal.RewriteWith(fill)
}

type discard struct{}

func (discard) Add(byte, ...[]byte) {}

// picture is what a worker can see of a session.
type picture struct {
	files   []string // path=mode content, directories and links too
	changes string
	staged  string
	cps     string
	pending string // the commits of pushes waiting for a reviewer
}

func look(t *testing.T, s *session.Session, g *approval.Gate) picture {
	t.Helper()
	var p picture
	ws := s.Workspace()
	err := fs.WalkDir(ws.FS(), ".", func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		switch {
		case de.IsDir():
			p.files = append(p.files, fmt.Sprintf("%s=dir %o", path, info.Mode().Perm()))
		case de.Type()&fs.ModeSymlink != 0:
			to, err := ws.Readlink(path)
			if err != nil {
				return err
			}
			p.files = append(p.files, fmt.Sprintf("%s=link %s", path, to))
		default:
			data, err := ws.ReadFile(path)
			if err != nil {
				return err
			}
			p.files = append(p.files, fmt.Sprintf("%s=%o %d %x", path, info.Mode().Perm(), len(data), data[:min(len(data), 64)]))
		}
		return nil
	})
	must(t, err)
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
	var pend []string
	for _, r := range g.Pending() {
		pend = append(pend, r.New.String()+" to "+r.Ref)
	}
	slices.Sort(pend)
	p.pending = strings.Join(pend, ",")
	return p
}

func samePicture(t *testing.T, what string, got, want picture) {
	t.Helper()
	if fmt.Sprint(got.files) != fmt.Sprint(want.files) {
		t.Errorf("%s: files differ:\n got %v\nwant %v", what, got.files, want.files)
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
	if got.pending != want.pending {
		t.Errorf("%s: pushes waiting differ:\n got %s\nwant %s", what, got.pending, want.pending)
	}
}
