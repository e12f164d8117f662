package natsstore

import (
	"bytes"
	"testing"

	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/files"
)

// BenchmarkSmallBatch writes a call's small batch (a 200-byte record and
// a commit record) to each store in the same run: the local files and
// JetStream on loopback (an in-process server); "+here" adds what a
// session's save checks after its batch (Lease.Here and Journal.Here).
func BenchmarkSmallBatch(b *testing.B) {
	stores := []struct {
		name string
		st   func(b *testing.B) store.Store
	}{
		{"files", func(b *testing.B) store.Store { return files.Store{Root: b.TempDir()} }},
		{"nats", func(b *testing.B) store.Store {
			st, err := New(connect(b, startServer(b, b.TempDir(), -1)), Options{Prefix: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	}
	for _, s := range stores {
		for _, here := range []bool{false, true} {
			name := s.name
			if here {
				name += "+here"
			}
			b.Run(name, func(b *testing.B) { benchWrite(b, s.st(b), here) })
		}
	}
}

func benchWrite(b *testing.B, st store.Store, here bool) {
	l, err := st.Create(store.Meta{Worker: "w"})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Unlock()
	j, err := l.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	var bt journal.Batch
	bt.Add(data, bytes.Repeat([]byte("x"), 200))
	bt.Add(commit, nil)
	for b.Loop() {
		if err := j.Write(&bt); err != nil {
			b.Fatal(err)
		}
		if here && (l.Here() != nil || j.Here() != nil) {
			b.Fatal("the state moved")
		}
	}
}
