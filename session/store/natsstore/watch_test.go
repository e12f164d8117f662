package natsstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/session/store"
)

// TestHereLearnsByTheWatch: Here reads nothing from the server, yet a
// write of the session's meta or gen entry by another, or its lease
// taken, is noticed within a short delay; and a lease its holder has
// not renewed for a TTL is lost with no server asked.
func TestHereLearnsByTheWatch(t *testing.T) {
	const ttl = 400 * time.Millisecond
	st := storeMaker(t, ttl)(t).(*Store)
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(t *testing.T, l *lease)
		here   func(l *lease, j store.Journal) error
	}{
		{"meta written by another", func(t *testing.T, l *lease) {
			_, err := st.sessions.Put(ctx, metaKey(l.id), []byte(`{"worker":"other"}`))
			must(t, err)
		}, func(l *lease, _ store.Journal) error { return l.Here() }},
		{"journal claimed by another", func(t *testing.T, l *lease) {
			_, err := st.sessions.Put(ctx, genKey(l.id), []byte(`{"gen":1,"holder":"other"}`))
			must(t, err)
		}, func(_ *lease, j store.Journal) error { return j.Here() }},
		{"lease taken by another", func(t *testing.T, l *lease) {
			_, err := st.leases.Put(ctx, l.id, []byte(`{"token":"other"}`))
			must(t, err)
		}, func(l *lease, _ store.Journal) error { return l.Here() }},
		{"lease not renewed for a TTL", func(t *testing.T, l *lease) {
			l.stopRenewing()
		}, func(l *lease, _ store.Journal) error { return l.Here() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sl, err := st.Create(store.Meta{Worker: "w"})
			must(t, err)
			defer sl.Unlock()
			l := sl.(*lease)
			j, err := l.OpenJournal(isCommit, func(byte, []byte) error { return nil })
			must(t, err)
			must(t, j.Write(batch("a")))
			must(t, c.here(l, j))
			c.change(t, l)
			start := time.Now()
			for c.here(l, j) == nil {
				if time.Since(start) > 2*ttl+time.Second {
					t.Fatalf("not noticed in %v", time.Since(start))
				}
				time.Sleep(time.Millisecond)
			}
			if err := c.here(l, j); !errors.Is(err, store.ErrStateMoved) {
				t.Fatalf("Here: %v, want ErrStateMoved", err)
			}
			t.Logf("noticed after %v", time.Since(start).Round(time.Millisecond))
		})
	}
}
