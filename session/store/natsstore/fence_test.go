package natsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/session/store"
)

const (
	data   byte = 1
	commit byte = 2
)

func isCommit(typ byte) bool { return typ == commit }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// batch is a data record of p and a commit record.
func batch(p string) *journal.Batch {
	var b journal.Batch
	b.Add(data, []byte(p))
	b.Add(commit, nil)
	return &b
}

// readAll is session id's data records, read without taking it.
func readAll(t *testing.T, st *Store, id string) []string {
	t.Helper()
	var got []string
	must(t, st.ReadJournal(id, isCommit, func(typ byte, p []byte) error {
		if typ == data {
			got = append(got, string(p))
		}
		return nil
	}))
	return got
}

// TestLostLeaseWritesNothing: holder A stops renewing (a server that
// hangs), its lease expires, B takes the session; A and B then race to
// write. Every write A makes after B opened the journal is refused, and
// the journal holds exactly the writes that were acknowledged, A's all
// before B's.
func TestLostLeaseWritesNothing(t *testing.T) {
	const ttl = 300 * time.Millisecond
	st := storeMaker(t, ttl)(t).(*Store)
	la, err := st.Create(store.Meta{Worker: "w"})
	must(t, err)
	defer la.Unlock()
	ja, err := la.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	must(t, err)
	must(t, ja.Write(batch("a0")))
	id := la.SessionID()
	if _, err := st.Open(id); !errors.Is(err, store.ErrSessionBusy) {
		t.Fatalf("opening a held session: %v, want ErrSessionBusy", err)
	}
	la.(*lease).stopRenewing() // A hangs: it believes it still holds the session
	var lb store.Lease
	for deadline := time.Now().Add(10 * ttl); ; time.Sleep(ttl / 10) {
		if lb, err = st.Open(id); err == nil {
			break
		}
		if !errors.Is(err, store.ErrSessionBusy) || time.Now().After(deadline) {
			t.Fatalf("taking the session after its lease expired: %v", err)
		}
	}
	defer lb.Unlock()
	var acked struct {
		sync.Mutex
		a, b []string
	}
	var wg sync.WaitGroup
	write := func(j store.Journal, who string, to *[]string, open func() store.Journal) {
		defer wg.Done()
		if open != nil {
			j = open()
		}
		for i := range 30 {
			p := fmt.Sprint(who, i+1)
			if err := j.Write(batch(p)); err == nil {
				acked.Lock()
				*to = append(*to, p)
				acked.Unlock()
			} else if who == "b" {
				t.Errorf("the lease's holder could not write: %v", err)
			}
		}
	}
	wg.Add(2)
	go write(ja, "a", &acked.a, nil)
	go write(nil, "b", &acked.b, func() store.Journal {
		jb, err := lb.OpenJournal(isCommit, func(byte, []byte) error { return nil })
		if err != nil {
			t.Error(err)
		}
		return jb
	})
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// A, told it was fenced, writes nothing more, rewrite or not.
	if err := ja.Write(batch("a-late")); !errors.Is(err, ErrFenced) {
		t.Fatalf("a fenced holder's write: %v, want ErrFenced", err)
	}
	if err := ja.RewriteWith(func(r journal.Records) error { r.Add(data, []byte("a-rewrite")); r.Add(commit); return nil }); !errors.Is(err, ErrFenced) {
		t.Fatalf("a fenced holder's rewrite: %v, want ErrFenced", err)
	}
	got := readAll(t, st, id)
	want := append(append([]string{"a0"}, acked.a...), acked.b...)
	if !slices.Equal(got, want) {
		t.Fatalf("the journal holds %q; acknowledged: A %q, then B %q", got, acked.a, acked.b)
	}
	if len(acked.b) != 30 {
		t.Fatalf("B wrote %d of 30", len(acked.b))
	}
	t.Logf("A had %d writes acknowledged before B's fence", len(acked.a))
}

// TestBatchCutBetweenChunks: a batch larger than the server's largest
// message goes in chunks; a holder that died after some of them leaves a
// batch that replays not at all, and what the next holder writes replays
// after the last whole batch.
func TestBatchCutBetweenChunks(t *testing.T) {
	st := storeMaker(t, 0)(t).(*Store)
	l, err := st.Create(store.Meta{Worker: "w"})
	must(t, err)
	j, err := l.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	must(t, err)
	big := string(bytes.Repeat([]byte("x"), 3*testPayload))
	must(t, j.Write(batch(big)))
	// The next batch: its first chunks published, then the holder dies.
	nj := j.(*natsJournal)
	w := nj.newChunker(context.Background(), st.subject(l.SessionID(), nj.gen), nj.last)
	for _, s := range batch(big + "lost").Segments() {
		w.write(s)
	}
	must(t, w.err)
	if w.n < 2 {
		t.Fatalf("the cut batch went in %d chunks: the test wants several", w.n)
	}
	if got := readAll(t, st, l.SessionID()); len(got) != 1 || got[0] != big {
		t.Fatalf("with a batch cut between its chunks, read %d records", len(got))
	}
	l.Unlock()
	l, err = st.Open(l.SessionID())
	must(t, err)
	defer l.Unlock()
	var got []string
	j, err = l.OpenJournal(isCommit, func(typ byte, p []byte) error {
		if typ == data {
			got = append(got, string(p))
		}
		return nil
	})
	must(t, err)
	if len(got) != 1 || got[0] != big {
		t.Fatalf("reopened after a batch cut between its chunks: %d records", len(got))
	}
	must(t, j.Write(batch("next")))
	if got := readAll(t, st, l.SessionID()); len(got) != 2 || got[1] != "next" {
		t.Fatalf("written after the cut batch: %d records", len(got))
	}
}

// TestFailedWriteTakenBack: a message of this holder's that landed
// though its write failed (an acknowledgement lost) is taken back before
// the next write, which goes through; the journal replays as if the
// failed write had never been.
func TestFailedWriteTakenBack(t *testing.T) {
	st := storeMaker(t, 0)(t).(*Store)
	l, err := st.Create(store.Meta{Worker: "w"})
	must(t, err)
	defer l.Unlock()
	j, err := l.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	must(t, err)
	must(t, j.Write(batch("a")))
	nj := j.(*natsJournal)
	// "lost" lands, its acknowledgement does not reach the holder.
	w := nj.newChunker(context.Background(), st.subject(l.SessionID(), nj.gen), nj.last)
	for _, s := range batch("lost").Segments() {
		w.write(s)
	}
	w.flush(true)
	must(t, w.err)
	must(t, j.Write(batch("b")))
	if got := readAll(t, st, l.SessionID()); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("after a write whose acknowledgement was lost: %q, want [a b]", got)
	}
}

// TestRenewedLeaseOutlivesItsTTL: a holder that keeps renewing keeps the
// session well past the lease's TTL; one that lets go frees it at once.
func TestRenewedLeaseOutlivesItsTTL(t *testing.T) {
	const ttl = 300 * time.Millisecond
	st := storeMaker(t, ttl)(t).(*Store)
	l, err := st.Create(store.Meta{Worker: "w"})
	must(t, err)
	defer l.Unlock()
	time.Sleep(4 * ttl)
	if l2, err := st.Open(l.SessionID()); !errors.Is(err, store.ErrSessionBusy) {
		if err == nil {
			l2.Unlock()
		}
		t.Fatalf("opening a session renewed past its TTL: %v, want ErrSessionBusy", err)
	}
	if err := l.Here(); err != nil {
		t.Fatalf("the holder's Here after renewals: %v", err)
	}
	l.Unlock()
	l2, err := st.Open(l.SessionID())
	must(t, err)
	l2.Unlock()
}
