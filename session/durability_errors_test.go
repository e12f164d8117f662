package session_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// warnings collects what a session told the operator.
type warnings struct {
	mu   sync.Mutex
	msgs []string
	// more is closed (and replaced) when a warning comes.
	more chan struct{}
}

func (w *warnings) add(m string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, m)
	if w.more != nil {
		close(w.more)
		w.more = nil
	}
}

// wait returns when a warning holding sub has come, or after 10 s.
func (w *warnings) wait(sub string) {
	timeout := time.After(10 * time.Second)
	for {
		w.mu.Lock()
		if w.more == nil {
			w.more = make(chan struct{})
		}
		more := w.more
		w.mu.Unlock()
		if w.has(sub) {
			return
		}
		select {
		case <-more:
		case <-timeout:
			return
		}
	}
}

func (w *warnings) has(sub string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// A durable session that cannot save that a push is landing does not
// touch the target: the branch stays, the ledger says failed, the worker
// is told nothing was pushed and why.
func TestPushNotMadeWhenLandingCannotBeSaved(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	before := git(t, bare, "rev-parse", "main")
	d := newDurable(t, bare, approval.Policy{}, nil)
	must(t, d.s.Workspace().WriteFile("new.txt", []byte("new\n"), 0o644))
	c, err := d.s.Stage(nil, "add new")
	must(t, err)
	must(t, d.s.Save())
	type answer struct {
		res session.PushResult
		err error
	}
	done := make(chan answer)
	go func() {
		res, err := d.s.Push(context.Background(), c.ID.String(), "", nil)
		for res.Pending && err == nil {
			// The session answers "still waiting" after its timeout;
			// the worker calls again, as it is told to.
			res, err = d.s.Push(context.Background(), c.ID.String(), "", nil)
		}
		done <- answer{res, err}
	}()
	id := waitPending(t, d.gate, 1)[0].ID
	session.BreakJournal(d.s)
	if _, err := d.gate.Resolve(approval.Decision{Request: id, Verdict: approval.Approve}); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err == nil || !strings.Contains(a.err.Error(), "nothing was pushed") || !strings.Contains(a.err.Error(), "could not be saved") {
		t.Fatalf("push answered %+v, %v; want an error saying the session could not be saved and nothing was pushed", a.res, a.err)
	}
	if after := git(t, bare, "rev-parse", "main"); after != before {
		t.Fatalf("the branch moved to %s although the session could not save that it was landing", after)
	}
	if got := pushRecords(t, d.l); got["landing"] != 1 || got["failed"] != 1 || got["pushed"] != 0 {
		t.Fatalf("ledger push records %v, want one landing and one failed", got)
	}
}

// ledgerBreaker closes the ledger before it pushes (or fails), so that
// the gate cannot record how the push ended.
type ledgerBreaker struct {
	targets.Target
	l    **ledger.Ledger
	fail bool
}

func (b ledgerBreaker) Push(ctx context.Context, g approval.Grant, store *staging.Store) error {
	(*b.l).Close()
	if b.fail {
		return errors.New("remote: pre-receive hook declined")
	}
	return b.Target.Push(ctx, g, store)
}

// The push's outcome that the ledger cannot take reaches the worker (in
// the answer) and the operator (a warning); a landed push is still
// reported as landed.
func TestPushOutcomeTheLedgerCannotTakeIsTold(t *testing.T) {
	for _, fail := range []bool{false, true} {
		name := map[bool]string{false: "landed", true: "failed"}[fail]
		t.Run(name, func(t *testing.T) {
			r := repo(t, true, map[string]string{"README.md": "# p\n"})
			var l *ledger.Ledger
			var w warnings
			e := newEnv(t, r, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}}, warn: w.add,
				wrap: func(tg targets.Target) targets.Target { return ledgerBreaker{Target: tg, l: &l, fail: fail} }})
			l = e.l
			e.write(t, "a.txt", "a\n")
			c, err := e.s.Stage(nil, "A")
			must(t, err)
			res, err := e.s.Push(context.Background(), "", "", nil)
			head := strings.TrimSpace(git(t, r, "rev-parse", "main"))
			if !fail {
				if err != nil || head != c.ID.String() {
					t.Fatalf("push: %v (branch at %s, want %s)", err, head, c.ID)
				}
				if !strings.Contains(strings.Join(res.Notes, "\n"), "the ledger could not record it") {
					t.Errorf("the answer's notes %q do not say the ledger could not record the push", res.Notes)
				}
			} else if err == nil || !strings.Contains(err.Error(), "the ledger could not record that it failed") || !strings.Contains(err.Error(), "pre-receive hook declined") {
				t.Errorf("push answered %v; want the target's error and that the ledger could not record it", err)
			}
			if !w.has("the ledger could not record it") {
				t.Errorf("the operator was not told; warnings:\n%s", w.String())
			}
		})
	}
}

// A withdrawal the ledger cannot take leaves the request open for the
// reviewer and is told: to the operator when the worker is gone (its
// client left, its session ended), to the worker when its own call
// needed it (a discard of the commit under review).
func TestWithdrawalTheLedgerCannotTakeIsTold(t *testing.T) {
	cases := []struct {
		name     string
		withdraw func(t *testing.T, e *env, c *staging.Commit, cancel func()) error
	}{
		{"client left", func(t *testing.T, e *env, c *staging.Commit, cancel func()) error { cancel(); return nil }},
		{"session ended", func(t *testing.T, e *env, c *staging.Commit, cancel func()) error { e.s.Close(); return nil }},
		{"discard", func(t *testing.T, e *env, c *staging.Commit, cancel func()) error {
			_, err := e.s.Discard(c.ID.String(), false)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := repo(t, true, map[string]string{"README.md": "# p\n"})
			var w warnings
			e := newEnv(t, r, config{warn: w.add})
			e.write(t, "a.txt", "a\n")
			c, err := e.s.Stage(nil, "A")
			must(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := e.s.Push(ctx, c.ID.String(), "", nil)
				done <- err
			}()
			waitPending(t, e.gate, 1)
			e.l.Close()
			werr := tc.withdraw(t, e, c, cancel)
			if tc.name == "discard" {
				if werr == nil || !strings.Contains(werr.Error(), "could not be withdrawn") {
					t.Fatalf("discard answered %v; want that the request could not be withdrawn", werr)
				}
			} else {
				if tc.name == "client left" {
					<-done
				}
				if !w.has("could not be withdrawn") {
					t.Fatalf("the operator was not told; warnings:\n%s", w.String())
				}
			}
			if len(e.gate.Pending()) != 1 {
				t.Fatalf("the request is gone from the reviewer's list although the ledger never recorded its withdrawal")
			}
		})
	}
}

// A push cut by a restart, whose outcome the resumed session cannot
// write to the ledger, is still taken up by its branch, and the worker
// and the operator (Recovered.Ended) are told the ledger lacks it.
func TestRecoveredOutcomeTheLedgerCannotTakeIsTold(t *testing.T) {
	d := cutWhileLanding(t, true)
	session.Crash(d.s)
	d.l.Close()
	d.s = nil
	dir, err := session.OpenStateDir(d.root, d.id)
	must(t, err)
	opts := d.options(t, dir)
	d.l.Close() // the resumed server's ledger cannot be written
	s, rec, err := session.Resume(context.Background(), d.w, opts)
	must(t, err)
	d.s = s
	if len(rec.Ended) != 1 || !strings.Contains(rec.Ended[0], "had landed") || !strings.Contains(rec.Ended[0], "The ledger could not record this") {
		t.Fatalf("recovered %q; want the landed push, and that the ledger could not record it", rec.Ended)
	}
	if st := s.Status(); len(st.Staged) != 0 {
		t.Fatalf("%d commit(s) still staged: the landed push was not taken up", len(st.Staged))
	}
}

// journalBreaker makes the session's saves fail once the push has been
// saved as landing, then pushes.
type journalBreaker struct {
	targets.Target
	s **session.Session
}

func (b journalBreaker) Push(ctx context.Context, g approval.Grant, store *staging.Store) error {
	session.BreakJournal(*b.s)
	return b.Target.Push(ctx, g, store)
}

// A push that lands after its call answered, when its end cannot be
// saved, is told to the operator; a restart finds it landed by its branch
// (the journal holds it as landing), so it is not lost.
func TestPushEndTheJournalCannotTakeIsTold(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	var w warnings
	var s *session.Session
	d := newDurable(t, bare, approval.Policy{}, func(tg targets.Target) targets.Target { return journalBreaker{tg, &s} })
	d.warn = w.add
	s = d.s
	must(t, d.s.Workspace().WriteFile("new.txt", []byte("new\n"), 0o644))
	c, err := d.s.Stage(nil, "add new")
	must(t, err)
	res, err := d.s.Push(context.Background(), c.ID.String(), "", nil)
	if err != nil || !res.Pending {
		t.Fatalf("push answered %+v, %v; want pending (no reviewer yet)", res, err)
	}
	id := waitPending(t, d.gate, 1)[0].ID
	if _, err := d.gate.Resolve(approval.Decision{Request: id, Verdict: approval.Approve}); err != nil {
		t.Fatal(err)
	}
	w.wait("after a push landed")
	if !w.has("saving the session after a push landed failed") {
		t.Fatalf("the operator was not told the push's end was not saved; warnings:\n%s", w.String())
	}
	rec := d.crashAndResume(t)
	if len(rec.Ended) != 1 || !strings.Contains(rec.Ended[0], "had landed") {
		t.Fatalf("recovered %q; want the landed push found by its branch", rec.Ended)
	}
	if st := d.s.Status(); len(st.Staged) != 0 {
		t.Fatalf("%d commit(s) still staged after the resume", len(st.Staged))
	}
}

// A session that cannot save as it closes tells the operator.
func TestCloseThatCannotSaveIsTold(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	var w warnings
	d := newDurable(t, bare, approval.Policy{}, nil)
	d.warn = w.add
	must(t, d.s.Workspace().WriteFile("new.txt", []byte("new\n"), 0o644))
	session.BreakJournal(d.s)
	d.s.Close()
	d.s = nil
	if !w.has("saving the session as it closed failed") {
		t.Fatalf("the operator was not told; warnings:\n%s", w.String())
	}
}

// A flush of the journal that failed is told to the operator at once and
// to the worker once (Session.FlushErr, which gittools adds to the next
// writing call's answer).
func TestFailedFlushIsToldOnce(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	var w warnings
	d := newDurable(t, bare, approval.Policy{}, nil)
	d.warn = w.add
	must(t, d.s.FlushErr())
	session.FailFlush(d.s, errors.New("input/output error"))
	session.FailFlush(d.s, errors.New("input/output error"))
	err := d.s.FlushErr()
	if err == nil || !strings.Contains(err.Error(), "could not be flushed to disk") || !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("FlushErr = %v; want the failed flush", err)
	}
	if err := d.s.FlushErr(); err != nil {
		t.Fatalf("told twice: %v", err)
	}
	if w.String() == "" || strings.Count(w.String(), "flushing the journal to disk failed") != 1 {
		t.Fatalf("the operator should be told once; warnings:\n%s", w.String())
	}
}

// A session holding changes it cannot save is busy, so that a server
// does not unload it (its memory is their only copy).
func TestUnsavedSessionIsBusy(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	d := newDurable(t, bare, approval.Policy{}, nil)
	must(t, d.s.Workspace().WriteFile("new.txt", []byte("new\n"), 0o644))
	if d.s.Busy() {
		t.Fatal("a session that can save is not busy")
	}
	must(t, d.s.Workspace().WriteFile("newer.txt", []byte("newer\n"), 0o644))
	session.BreakJournal(d.s)
	if !d.s.Busy() {
		t.Fatal("a session holding a change it cannot save is not busy: a server would unload it and lose the change")
	}
}
