package natsstore

import (
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/session/store"
)

// TestBreakTakesOverAtOnceAndFencesTheHolder: a server that finds a
// session's holder dead breaks its lease (no TTL waited out) and opens
// it; the old holder, in fact alive, is fenced. A lease renewed since it
// was read is not broken.
func TestBreakTakesOverAtOnceAndFencesTheHolder(t *testing.T) {
	mk := storeMaker(t, time.Hour) // a TTL no test waits out
	a := mk(t).(*Store)
	a.owner = "http://a.example:8787"
	la, err := a.Create(store.Meta{Worker: "w"})
	must(t, err)
	defer la.Unlock()
	ja, err := la.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	must(t, err)
	must(t, ja.Write(batch("a0")))
	id := la.SessionID()

	b := &Store{}
	*b = *a
	b.owner = "http://b.example:8787"
	_, err = b.Open(id)
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Owner != "http://a.example:8787" || !errors.Is(err, store.ErrSessionBusy) {
		t.Fatalf("opening a held session: %v, want a BusyError naming a's address", err)
	}
	owner, rev, held, err := b.Holder(id)
	must(t, err)
	if !held || owner != "http://a.example:8787" {
		t.Fatalf("Holder = %q, %v", owner, held)
	}
	la.(*lease).renewOnce() // a renews: the revision b read is old
	if err := b.Break(id, rev); !errors.Is(err, ErrNotBroken) {
		t.Fatalf("breaking a renewed lease: %v, want ErrNotBroken", err)
	}
	_, rev, _, err = b.Holder(id)
	must(t, err)
	la.(*lease).stopRenewing() // a hangs from here on
	must(t, b.Break(id, rev))
	lb, err := b.Open(id)
	must(t, err)
	defer lb.Unlock()
	jb, err := lb.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	must(t, err)
	must(t, jb.Write(batch("b1")))
	if err := ja.Write(batch("a-late")); !errors.Is(err, ErrFenced) {
		t.Fatalf("the broken holder's write: %v, want ErrFenced", err)
	}
	if got := readAll(t, a, id); len(got) != 2 || got[0] != "a0" || got[1] != "b1" {
		t.Fatalf("journal: %q, want [a0 b1]", got)
	}
}
