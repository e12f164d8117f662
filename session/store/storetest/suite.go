// Package storetest is the conformance suite every session store runs
// (store.Store): the local files (package files) and any store that keeps
// sessions elsewhere. What it checks is what package session relies on:
// a journal replays what was appended up to the last commit record and
// nothing of a batch a crash cut; a rewrite replaces it whole or not at
// all; a session is held by one opener at a time; meta, summary, listing,
// removal and pruning behave as airlock sessions shows them.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/session/store"
)

// Options are what a store can do to itself that the interface cannot:
// the suite's faults. A nil one skips the checks that need it.
type Options struct {
	// CutTail removes the last n bytes of session id's journal, as a
	// crash in the middle of a write leaves it (a record half written).
	CutTail func(t *testing.T, st store.Store, id string, n int)
	// Vanish removes session id's state from under its holder, as an
	// operator's rm -rf does.
	Vanish func(t *testing.T, st store.Store, id string)
}

// The record types the suite writes: commit ends a batch.
const (
	data   byte = 1
	commit byte = 2
)

func isCommit(typ byte) bool { return typ == commit }

// rec is a record as replayed.
type rec struct {
	typ     byte
	payload string
}

// Suite runs the conformance checks against stores newStore makes (each
// call a new, empty one).
func Suite(t *testing.T, newStore func(t *testing.T) store.Store, o Options) {
	t.Run("CreateOpenMeta", func(t *testing.T) { testMeta(t, newStore(t)) })
	t.Run("SecondOpenerRefused", func(t *testing.T) { testOwnership(t, newStore(t)) })
	t.Run("JournalReplays", func(t *testing.T) { testReplay(t, newStore(t)) })
	t.Run("UncommittedBatchDropped", func(t *testing.T) { testUncommitted(t, newStore(t)) })
	t.Run("RewriteWhole", func(t *testing.T) { testRewrite(t, newStore(t)) })
	t.Run("SummaryAndList", func(t *testing.T) { testList(t, newStore(t)) })
	t.Run("Remove", func(t *testing.T) { testRemove(t, newStore(t)) })
	t.Run("Prune", func(t *testing.T) { testPrune(t, newStore(t)) })
	t.Run("TornTail", func(t *testing.T) {
		if o.CutTail == nil {
			t.Skip("the store cannot cut a record in half")
		}
		testTorn(t, newStore(t), o.CutTail)
	})
	t.Run("VanishedAndRemade", func(t *testing.T) {
		if o.Vanish == nil {
			t.Skip("the store cannot lose its state under its holder")
		}
		testVanish(t, newStore(t), o.Vanish)
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// closeJournal closes j at the end of a check.
func closeJournal(t *testing.T, j store.Journal) {
	t.Helper()
	if err := j.Close(); err != nil {
		t.Errorf("closing the journal: %v", err)
	}
}

func create(t *testing.T, st store.Store, worker string) store.Lease {
	t.Helper()
	l, err := st.Create(store.Meta{Worker: worker, WorkerKey: "key:" + worker})
	must(t, err)
	t.Cleanup(l.Unlock)
	return l
}

// batch is records of payloads, a commit record last when commits.
func batch(commits bool, payloads ...string) *journal.Batch {
	var b journal.Batch
	for _, p := range payloads {
		b.Add(data, []byte(p))
	}
	if commits {
		b.Add(commit, []byte(fmt.Sprint(len(payloads))))
	}
	return &b
}

// open opens l's journal and returns it with what it replayed.
func open(t *testing.T, l store.Lease) (store.Journal, []rec) {
	t.Helper()
	var got []rec
	j, err := l.OpenJournal(isCommit, func(typ byte, payload []byte) error {
		got = append(got, rec{typ, string(payload)})
		return nil
	})
	must(t, err)
	return j, got
}

// reopen lets l go and takes its session again.
func reopen(t *testing.T, st store.Store, l store.Lease) store.Lease {
	t.Helper()
	l.Unlock()
	l2, err := st.Open(l.SessionID())
	must(t, err)
	t.Cleanup(l2.Unlock)
	return l2
}

func want(t *testing.T, what string, got []rec, payloads ...string) {
	t.Helper()
	var ps []string
	for _, r := range got {
		if r.typ == data {
			ps = append(ps, r.payload)
		}
	}
	if fmt.Sprint(ps) != fmt.Sprint(payloads) {
		t.Fatalf("%s: replayed %q, want %q", what, ps, payloads)
	}
}

func testMeta(t *testing.T, st store.Store) {
	l := create(t, st, "w1")
	id := l.SessionID()
	if id == "" || l.Info().ID != id || l.Info().Created.IsZero() || l.Where() == "" {
		t.Fatalf("created %q: %+v at %q", id, l.Info(), l.Where())
	}
	m, err := st.ReadMeta(id)
	must(t, err)
	if m.Worker != "w1" || m.ID != id {
		t.Fatalf("ReadMeta %+v", m)
	}
	m.Binding = &store.Binding{Targets: []string{"origin=local:/x"}, Policy: store.Policy{Approval: "ask", Run: "off"}}
	must(t, l.SetInfo(m))
	l = reopen(t, st, l)
	if got := l.Info(); got.Binding == nil || fmt.Sprint(got.Binding.Targets) != "[origin=local:/x]" {
		t.Fatalf("after SetInfo and a reopen: %+v", got)
	}
	if _, err := st.Open("no-such-session"); !errors.Is(err, store.ErrNoSession) {
		t.Fatalf("opening a session that is not there: %v, want ErrNoSession", err)
	}
	if _, err := st.ReadMeta("no-such-session"); !errors.Is(err, store.ErrNoSession) {
		t.Fatalf("reading a session that is not there: %v, want ErrNoSession", err)
	}
	if err := l.Here(); err != nil {
		t.Fatalf("Here of a session left alone: %v", err)
	}
}

func testOwnership(t *testing.T, st store.Store) {
	l := create(t, st, "w")
	if l2, err := st.Open(l.SessionID()); !errors.Is(err, store.ErrSessionBusy) {
		if err == nil {
			l2.Unlock()
		}
		t.Fatalf("a second opener: %v, want ErrSessionBusy", err)
	}
	if err := st.Remove(l.SessionID()); !errors.Is(err, store.ErrSessionBusy) {
		t.Fatalf("removing a held session: %v, want ErrSessionBusy", err)
	}
	list, err := st.List()
	must(t, err)
	if len(list) != 1 || !list[0].Running {
		t.Fatalf("a held session is listed as %+v, want running", list)
	}
	l.Unlock()
	l2, err := st.Open(l.SessionID())
	must(t, err)
	defer l2.Unlock()
	list, err = st.List()
	must(t, err)
	if len(list) != 1 || !list[0].Running {
		t.Fatalf("taken again: listed as %+v", list)
	}
}

func testReplay(t *testing.T, st store.Store) {
	l := create(t, st, "w")
	j, got := open(t, l)
	want(t, "a new journal", got)
	must(t, j.Write(batch(true, "a", "b")))
	big := string(bytes.Repeat([]byte("x"), 100<<10)) // written from where it is
	must(t, j.Write(batch(true, "c", big)))
	must(t, j.Sync())
	if err := j.Here(); err != nil {
		t.Fatal(err)
	}
	size := j.Size()
	if size < int64(len(big)) {
		t.Fatalf("Size %d after writing %d bytes", size, len(big))
	}
	var read []rec
	must(t, st.ReadJournal(l.SessionID(), isCommit, func(typ byte, p []byte) error {
		read = append(read, rec{typ, string(p)})
		return nil
	}))
	want(t, "read while held", read, "a", "b", "c", big)
	must(t, j.Close())
	l = reopen(t, st, l)
	j, got = open(t, l)
	defer closeJournal(t, j)
	want(t, "reopened", got, "a", "b", "c", big)
	if n := len(got); got[n-1].typ != commit || got[2].typ != commit {
		t.Fatalf("commit records not replayed in place: %v", got[:3])
	}
	if j.Size() != size {
		t.Fatalf("reopened journal of %d bytes, written %d", j.Size(), size)
	}
	// A batch a callback refuses stops the open.
	must(t, j.Close())
	boom := errors.New("refused")
	if _, err := l.OpenJournal(isCommit, func(byte, []byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("a replay that fails: %v", err)
	}
}

func testUncommitted(t *testing.T, st store.Store) {
	l := create(t, st, "w")
	j, _ := open(t, l)
	must(t, j.Write(batch(true, "a")))
	// The process dies after a batch whose commit record never came.
	must(t, j.Write(batch(false, "lost")))
	must(t, j.Close())
	l = reopen(t, st, l)
	j, got := open(t, l)
	want(t, "after a batch without its commit", got, "a")
	// What comes next follows the last whole batch.
	must(t, j.Write(batch(true, "b")))
	must(t, j.Close())
	l = reopen(t, st, l)
	j, got = open(t, l)
	defer closeJournal(t, j)
	want(t, "written after the cut", got, "a", "b")
}

func testRewrite(t *testing.T, st store.Store) {
	l := create(t, st, "w")
	j, _ := open(t, l)
	for i := range 20 {
		must(t, j.Write(batch(true, fmt.Sprint("old", i), string(bytes.Repeat([]byte("o"), 1000)))))
	}
	before := j.Size()
	must(t, j.RewriteWith(func(r journal.Records) error {
		r.Add(data, []byte("new"))
		r.Add(commit, []byte("1"))
		return nil
	}))
	if j.Size() >= before {
		t.Fatalf("a rewrite to one record left %d bytes (%d before)", j.Size(), before)
	}
	// A rewrite that fails leaves the journal as it was.
	boom := errors.New("fill failed")
	if err := j.RewriteWith(func(r journal.Records) error {
		r.Add(data, []byte("half"))
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("a failed rewrite: %v", err)
	}
	// Appends go on after a rewrite.
	must(t, j.Write(batch(true, "after")))
	must(t, j.Close())
	l = reopen(t, st, l)
	j, got := open(t, l)
	defer closeJournal(t, j)
	want(t, "rewritten", got, "new", "after")
}

func testList(t *testing.T, st store.Store) {
	list, err := st.List()
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("a new store lists %+v", list)
	}
	older := create(t, st, "older")
	newer := create(t, st, "newer")
	sum := store.Summary{Updated: time.Now().UTC().Truncate(time.Second), Changed: 2, Staged: 1, Checkpoints: 3, Pending: 1, Bytes: 42}
	must(t, older.WriteSummary(sum))
	older.Unlock()
	list, err = st.List()
	must(t, err)
	if len(list) != 2 || list[0].ID != newer.SessionID() || list[1].ID != older.SessionID() {
		t.Fatalf("listed %+v, want newest first", list)
	}
	o := list[1]
	if o.Running || o.NoState || o.Changed != 2 || o.Staged != 1 || o.Checkpoints != 3 || o.Pending != 1 || !o.Updated.Equal(sum.Updated) || !o.Unfinished() {
		t.Fatalf("the older session is listed as %+v, its summary %+v", o, sum)
	}
	if n := list[0]; !n.Running || !n.NoState || n.Worker != "newer" {
		t.Fatalf("a running session that never wrote a summary is listed as %+v", n)
	}
}

func testRemove(t *testing.T, st store.Store) {
	a := create(t, st, "a")
	b := create(t, st, "b")
	j, _ := open(t, a)
	must(t, j.Write(batch(true, "x")))
	must(t, j.Close())
	a.Unlock()
	must(t, st.Remove(a.SessionID()))
	if _, err := st.Open(a.SessionID()); !errors.Is(err, store.ErrNoSession) {
		t.Fatalf("opening a removed session: %v", err)
	}
	// A held session removes itself (one that changed nothing is not
	// kept): gone once it is let go.
	must(t, b.Remove())
	b.Unlock()
	if _, err := st.Open(b.SessionID()); !errors.Is(err, store.ErrNoSession) {
		t.Fatalf("opening a session removed by its holder: %v", err)
	}
	list, err := st.List()
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("removed sessions still listed: %+v", list)
	}
}

func testPrune(t *testing.T, st store.Store) {
	old := time.Now().Add(-48 * time.Hour).UTC()
	mk := func(worker string, sum store.Summary, hold bool) string {
		l := create(t, st, worker)
		sum.Updated = old
		must(t, l.WriteSummary(sum))
		if !hold {
			l.Unlock()
		}
		return l.SessionID()
	}
	done := mk("done", store.Summary{Closed: true}, false)
	work := mk("work", store.Summary{Changed: 1, Closed: true}, false)
	held := mk("held", store.Summary{}, true)
	res, err := store.Prune(st, store.PruneOptions{OlderThan: time.Hour, DryRun: true})
	must(t, err)
	if len(res.Removed) != 1 || res.Removed[0].ID != done {
		t.Fatalf("a dry run would remove %+v, want %s", res.Removed, done)
	}
	if _, err := st.ReadMeta(done); err != nil {
		t.Fatalf("a dry run removed %s: %v", done, err)
	}
	res, err = store.Prune(st, store.PruneOptions{OlderThan: time.Hour})
	must(t, err)
	if len(res.Removed) != 1 || res.Removed[0].ID != done || len(res.Unfinished) != 1 || res.Unfinished[0].ID != work ||
		len(res.Running) != 1 || res.Running[0].ID != held {
		t.Fatalf("pruned %+v", res)
	}
	if got := store.Sweep(st, 72*time.Hour); len(got) != 0 {
		t.Fatalf("a sweep of sessions younger than its retention removed %v", got)
	}
	res, err = store.Prune(st, store.PruneOptions{Force: true})
	must(t, err)
	if len(res.Removed) != 1 || res.Removed[0].ID != work || len(res.Running) != 1 {
		t.Fatalf("forced: %+v", res)
	}
}

func testTorn(t *testing.T, st store.Store, cut func(*testing.T, store.Store, string, int)) {
	l := create(t, st, "w")
	j, _ := open(t, l)
	must(t, j.Write(batch(true, "a")))
	must(t, j.Write(batch(true, "b", "the last record, half written")))
	must(t, j.Close())
	id := l.SessionID()
	l.Unlock()
	// Cut inside the commit record, then inside the data before it.
	for _, n := range []int{1, 12, 30} {
		cut(t, st, id, n)
		l2, err := st.Open(id)
		must(t, err)
		j, got := open(t, l2)
		want(t, fmt.Sprintf("cut %d bytes from the end", n), got, "a")
		must(t, j.Write(batch(true, "b", "again")))
		must(t, j.Close())
		l2.Unlock()
	}
	l2, err := st.Open(id)
	must(t, err)
	defer l2.Unlock()
	j, got := open(t, l2)
	defer closeJournal(t, j)
	want(t, "written again after the cuts", got, "a", "b", "again")
}

func testVanish(t *testing.T, st store.Store, vanish func(*testing.T, store.Store, string)) {
	l := create(t, st, "w")
	j, _ := open(t, l)
	must(t, j.Write(batch(true, "a")))
	vanish(t, st, l.SessionID())
	// A store may learn of it by a watch: within a short delay.
	var lerr, jerr error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if lerr, jerr = l.Here(), j.Here(); errors.Is(lerr, store.ErrStateMoved) && jerr != nil {
			break
		}
	}
	if !errors.Is(lerr, store.ErrStateMoved) {
		t.Fatalf("Here 5s after the state vanished: %v, want ErrStateMoved", lerr)
	}
	if jerr == nil {
		t.Fatal("the journal's Here 5s after the state vanished: nil")
	}
	must(t, l.Remake())
	if err := l.Here(); err != nil {
		t.Fatalf("Here after Remake: %v", err)
	}
	// The holder writes the journal again whole.
	must(t, j.RewriteWith(func(r journal.Records) error {
		r.Add(data, []byte("a"))
		r.Add(commit, []byte("1"))
		return nil
	}))
	must(t, j.Close())
	m, err := st.ReadMeta(l.SessionID())
	must(t, err)
	if m.Worker != "w" {
		t.Fatalf("meta after Remake: %+v", m)
	}
	if l2, err := st.Open(l.SessionID()); !errors.Is(err, store.ErrSessionBusy) {
		if err == nil {
			l2.Unlock()
		}
		t.Fatalf("a second opener after Remake: %v, want ErrSessionBusy", err)
	}
	l = reopen(t, st, l)
	j, got := open(t, l)
	defer closeJournal(t, j)
	want(t, "after Remake", got, "a")
}
