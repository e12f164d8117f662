package ledgertest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// Store is where a ledger under test is kept.
type Store interface {
	// Open gives one more Ledger on the store, as another server holds
	// it (its own connection, its own file descriptor), closed when the
	// test ends.
	Open(t testing.TB) approval.Ledger
	// Verify checks the whole ledger as `airlock ledger verify` does.
	Verify(t testing.TB) ledger.Report
}

// Run runs the suite, each test on a new store.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"Empty", testEmpty},
		{"Chain", testChain},
		{"DataKeptExactly", testData},
		{"BadDataAddsNothing", testBadData},
		{"TwoServersOneChain", testTwoServers},
		{"ConcurrentServers", testConcurrent},
		{"OneDecisionAcrossServers", testOneDecisionAcrossServers},
		{"OneDecisionRace", testOneDecisionRace},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newStore(t)) })
	}
}

func testEmpty(t *testing.T, s Store) {
	l := s.Open(t)
	head, err := l.Head()
	if err != nil || head.Hash != "" {
		t.Fatalf("an empty ledger's head: %+v, %v", head, err)
	}
	first, err := l.First()
	if err != nil || first.Hash != "" {
		t.Fatalf("an empty ledger's first record: %+v, %v", first, err)
	}
	if recs, err := l.Records(); err != nil || len(recs) != 0 {
		t.Fatalf("an empty ledger's records: %v, %v", recs, err)
	}
	if rep := s.Verify(t); !rep.OK() || rep.Records != 0 {
		t.Fatalf("an empty ledger verifies as %+v", rep)
	}
}

var kinds = []string{ledger.KindRequest, ledger.KindDecision, ledger.KindPush, ledger.KindWithdrawal}

func testChain(t *testing.T, s Store) {
	l := s.Open(t)
	var got []ledger.Record
	for i := range 6 {
		rec, err := l.Append(kinds[i%len(kinds)], map[string]any{"request": fmt.Sprintf("r%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec)
	}
	for i, r := range got {
		if r.Seq != uint64(i+1) || r.Kind != kinds[i%len(kinds)] || (i == 0 && r.Prev != "") || (i > 0 && r.Prev != got[i-1].Hash) {
			t.Errorf("record %d as Append returned it: %+v", i, r)
		}
	}
	recs, err := l.Records()
	if err != nil {
		t.Fatal(err)
	}
	same(t, "Records", recs, got)
	if head, err := l.Head(); err != nil || head.Hash != got[5].Hash || head.Seq != 6 {
		t.Errorf("head %+v, %v; want record 6 %s", head, err, got[5].Hash)
	}
	if first, err := l.First(); err != nil || first.Hash != got[0].Hash {
		t.Errorf("first %+v, %v; want record 1 %s", first, err, got[0].Hash)
	}
	rep := s.Verify(t)
	if !rep.OK() || rep.Records != 6 || rep.Seq != 6 || rep.Head != got[5].Hash {
		t.Fatalf("verify: %+v (broken %v)", rep, rep.Broken)
	}
}

func testData(t *testing.T, s Store) {
	l := s.Open(t)
	data := map[string]any{"path": "a/\u00e9t\u00e9.md", "why": "line one\nline two\t\x1b[31m", "files": []string{"x", "y"}, "n": 1.5}
	rec, err := l.Append(ledger.KindRequest, data)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(data)
	recs, err := l.Records()
	if err != nil || len(recs) != 1 {
		t.Fatal(recs, err)
	}
	if string(recs[0].Data) != string(want) || string(rec.Data) != string(want) || !recs[0].Time.Equal(rec.Time) {
		t.Fatalf("data read back %s (time %v), appended %s (time %v), want %s", recs[0].Data, recs[0].Time, rec.Data, rec.Time, want)
	}
}

func testBadData(t *testing.T, s Store) {
	l := s.Open(t)
	if _, err := l.Append(ledger.KindRequest, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ledger.KindRequest, map[string]any{"f": func() {}}); err == nil {
		t.Fatal("a record whose data cannot be encoded was appended")
	}
	if rep := s.Verify(t); !rep.OK() || rep.Records != 1 {
		t.Fatalf("after a refused record: %+v", rep)
	}
}

// Two servers appending in turn: each finds the other's record as the
// head and chains after it.
func testTwoServers(t *testing.T, s Store) {
	a, b := s.Open(t), s.Open(t)
	var got []ledger.Record
	for i := range 6 {
		l := a
		if i%2 == 1 {
			l = b
		}
		rec, err := l.Append(ledger.KindDecision, map[string]any{"request": fmt.Sprintf("r%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec)
	}
	for _, l := range []approval.Ledger{a, b} {
		if head, err := l.Head(); err != nil || head.Hash != got[5].Hash {
			t.Errorf("a server's head %+v, %v; want the other's last record %s", head, err, got[5].Hash)
		}
	}
	recs, err := b.Records()
	if err != nil {
		t.Fatal(err)
	}
	same(t, "Records", recs, got)
	if rep := s.Verify(t); !rep.OK() || rep.Records != 6 {
		t.Fatalf("verify: %+v (broken %v)", rep, rep.Broken)
	}
}

// Concurrent servers: every record each was told is appended is in the
// one chain, once.
func testConcurrent(t *testing.T, s Store) {
	const servers, each = 4, 25
	ls := make([]approval.Ledger, servers)
	for i := range ls {
		ls[i] = s.Open(t)
	}
	got := ConcurrentAppends(t, ls, each, nil, nil)
	recs, err := ls[0].Records()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != servers*each || len(got) != servers*each {
		t.Fatalf("%d records in the ledger, %d appended; want %d", len(recs), len(got), servers*each)
	}
	AllOnce(t, recs, got)
	if rep := s.Verify(t); !rep.OK() || rep.Records != servers*each {
		t.Fatalf("verify: %d records, broken %v", rep.Records, rep.Broken)
	}
}

// ConcurrentAppends appends each records from every one of ls at once
// (as many servers) and returns the hashes of those acknowledged. fails,
// when not nil, counts the appends that failed, then no test failure;
// after, when not nil, is told how many appends are done after each.
func ConcurrentAppends(t testing.TB, ls []approval.Ledger, each int, fails *int, after func(done int)) map[string]bool {
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		done  int
		wg    sync.WaitGroup
	)
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				rec, err := l.Append(ledger.KindRequest, map[string]any{"server": i, "n": j})
				mu.Lock()
				switch {
				case err == nil:
					acked[rec.Hash] = true
				case fails != nil:
					*fails++
					t.Logf("server %d, append %d: %v", i, j, err)
				default:
					t.Error(err)
				}
				done++
				n := done
				mu.Unlock()
				if after != nil {
					after(n)
				}
			}
		}()
	}
	wg.Wait()
	return acked
}

// AllOnce checks that every acknowledged record is in recs, and no
// record is there twice.
func AllOnce(t testing.TB, recs []ledger.Record, acked map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.Hash] {
			t.Fatalf("record %d (%s) is in the ledger twice", r.Seq, r.Hash)
		}
		seen[r.Hash] = true
	}
	for h := range acked {
		if !seen[h] {
			t.Fatalf("acknowledged record %s is not in the ledger", h)
		}
	}
}

func same(t *testing.T, what string, got, want []ledger.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].Hash != want[i].Hash || got[i].Seq != want[i].Seq || string(got[i].Data) != string(want[i].Data) {
			t.Fatalf("%s: record %d is %+v, want %+v", what, i, got[i], want[i])
		}
	}
}
