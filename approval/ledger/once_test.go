package ledger_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval/ledger"
)

// RecordsSince reads the tail of the file backwards: records larger than
// its chunk, a torn line, and every starting point give what Records
// gives from there.
func TestRecordsSinceEveryStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := ledger.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 40 {
		size := 10
		if i%7 == 3 {
			size = 150 << 10 // over two of the reader's chunks
		}
		if _, err := l.Append(ledger.KindRequest, map[string]string{"pad": strings.Repeat("x", size)}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := l.Records()
	if err != nil {
		t.Fatal(err)
	}
	for after := 0; after <= len(all)+1; after++ {
		got, err := l.RecordsSince(uint64(after))
		if err != nil {
			t.Fatal(err)
		}
		want := all[min(after, len(all)):]
		if len(got) != len(want) || len(got) > 0 && (got[0].Seq != want[0].Seq || got[len(got)-1].Hash != want[len(want)-1].Hash) {
			t.Fatalf("after %d: %d records from %v; want %d", after, len(got), got, len(want))
		}
	}
}

// AppendUnless writes nothing when its check refuses a record after the
// mark, and appends as Append does otherwise.
func TestAppendUnlessRefusesAndWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := ledger.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	first, _ := l.Append(ledger.KindRequest, map[string]string{"id": "req-1"})
	if _, err := l.Append(ledger.KindDecision, map[string]string{"request": "req-1"}); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("decided already")
	seen := 0
	_, err = l.AppendUnless(ledger.KindDecision, map[string]string{"request": "req-1"}, first.Seq, func(r ledger.Record) error {
		seen++
		if r.Kind == ledger.KindDecision {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 1 {
		t.Fatalf("AppendUnless: %v after %d records; want the check's error after 1", err, seen)
	}
	if recs, _ := l.Records(); len(recs) != 2 {
		t.Fatalf("a refused AppendUnless wrote: %d records", len(recs))
	}
	rec, err := l.AppendUnless(ledger.KindDecision, map[string]string{"request": "req-2"}, 2, func(ledger.Record) error { return stop })
	if err != nil || rec.Seq != 3 {
		t.Fatalf("AppendUnless with nothing after the mark: %+v, %v", rec, err)
	}
	if rep, err := ledger.Verify(path); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
