package ledger_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
)

func appendN(t *testing.T, l *ledger.Ledger, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := l.Append(ledger.KindRequest, map[string]any{"n": i, "target": "local:/repo"}); err != nil {
			t.Fatal(err)
		}
	}
}

func verify(t *testing.T, path string) ledger.Report {
	t.Helper()
	rep, err := ledger.Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestLedgerChain(t *testing.T) {
	l := approvaltest.NewLedger(t)
	appendN(t, l, 5)
	rep := verify(t, l.Path())
	if !rep.OK() || rep.Records != 5 || rep.Torn != nil {
		t.Fatalf("report %+v", rep)
	}
	recs, err := ledger.Records(l.Path())
	if err != nil || len(recs) != 5 {
		t.Fatal(recs, err)
	}
	for i, r := range recs {
		if r.Seq != uint64(i+1) || (i > 0 && r.Prev != recs[i-1].Hash) || (i == 0 && r.Prev != "") {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if rep.Head != recs[4].Hash {
		t.Errorf("head %s, want %s", rep.Head, recs[4].Hash)
	}
	fi, _ := os.Stat(l.Path())
	dir, _ := os.Stat(filepath.Dir(l.Path()))
	if fi.Mode().Perm() != 0o600 || dir.Mode().Perm() != 0o700 {
		t.Errorf("permissions: file %v, dir %v", fi.Mode(), dir.Mode())
	}
}

// Each kind of tampering is caught at the record where it happened.
func TestLedgerVerifyCatchesTampering(t *testing.T) {
	rewrite := func(t *testing.T, path string, fn func(lines []string) []string) {
		data, _ := os.ReadFile(path)
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if err := os.WriteFile(path, []byte(strings.Join(fn(lines), "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rehash := func(line string) string {
		// An attacker who edits a record and recomputes its own hash.
		var r ledger.Record
		json.Unmarshal([]byte(line), &r)
		r.Data = json.RawMessage(`{"n":99,"target":"local:/elsewhere"}`)
		r.Hash = ""
		b, _ := json.Marshal(r)
		sum := sha256Hex(b)
		r.Hash = sum
		out, _ := json.Marshal(r)
		return string(out)
	}
	cases := []struct {
		name   string
		tamper func(lines []string) []string
		kind   string
		line   int
	}{
		{"edit data", func(ls []string) []string {
			ls[2] = strings.Replace(ls[2], `"n":2`, `"n":7`, 1)
			return ls
		}, "edited", 3},
		{"edit and rehash", func(ls []string) []string { ls[2] = rehash(ls[2]); return ls }, "edited", 4},
		{"remove middle", func(ls []string) []string { return append(ls[:2], ls[3:]...) }, "removed", 3},
		{"remove first", func(ls []string) []string { return ls[1:] }, "removed", 1},
		{"swap", func(ls []string) []string { ls[1], ls[2] = ls[2], ls[1]; return ls }, "reordered", 2},
		{"move last to front", func(ls []string) []string { return append([]string{ls[4]}, ls[:4]...) }, "reordered", 1},
		{"insert junk", func(ls []string) []string {
			return append(ls[:2], append([]string{`{"note":"hello"}`}, ls[2:]...)...)
		}, "malformed", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := approvaltest.NewLedger(t)
			appendN(t, l, 5)
			rewrite(t, l.Path(), c.tamper)
			rep := verify(t, l.Path())
			if rep.OK() || rep.Broken.Kind != c.kind || rep.Broken.Line != c.line {
				t.Errorf("report %+v broken %+v, want %s at line %d", rep, rep.Broken, c.kind, c.line)
			}
		})
	}
}

// A crash mid-write leaves half a line: Verify reports it, and appending
// afterwards starts cleanly on a line of its own.
func TestLedgerTornTail(t *testing.T) {
	l := approvaltest.NewLedger(t)
	appendN(t, l, 3)
	data, _ := os.ReadFile(l.Path())
	lines := strings.SplitAfter(string(data), "\n")
	half := lines[2][:len(lines[2])/2] // record 3, cut short with no newline
	if err := os.WriteFile(l.Path(), []byte(lines[0]+lines[1]+half), 0o600); err != nil {
		t.Fatal(err)
	}
	// A crash in the middle of writing record 3 comes before its anchor:
	// the anchor still names record 2.
	var rec2 ledger.Record
	json.Unmarshal([]byte(lines[1]), &rec2)
	anchor, _ := json.Marshal(ledger.Anchor{Seq: rec2.Seq, Hash: rec2.Hash})
	os.WriteFile(ledger.AnchorPath(l.Path()), anchor, 0o600)
	rep := verify(t, l.Path())
	if !rep.OK() || rep.Torn == nil || rep.Torn.Line != 3 || rep.Records != 2 {
		t.Fatalf("torn tail: %+v %+v", rep, rep.Torn)
	}
	l2, err := ledger.Open(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	rec, err := l2.Append(ledger.KindDecision, map[string]string{"verdict": "approve"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Seq != 3 {
		t.Errorf("the record after the torn line is number %d, want 3", rec.Seq)
	}
	rep = verify(t, l.Path())
	if !rep.OK() || rep.Torn == nil || rep.Torn.Line != 3 || rep.Records != 3 {
		t.Fatalf("after appending past the torn line: %+v %+v %+v", rep, rep.Torn, rep.Broken)
	}
	data, _ = os.ReadFile(l.Path())
	if !bytes.Contains(data, []byte(half+"\n{")) {
		t.Error("the torn fragment was dropped or merged with the next record")
	}
}

// Several handles (as several servers would hold) append at once: one
// unbroken chain, no number used twice.
func TestLedgerConcurrentAppenders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	var wg sync.WaitGroup
	for h := 0; h < 4; h++ {
		l, err := ledger.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 25; i++ {
					if _, err := l.Append(ledger.KindRequest, map[string]int{"h": h, "i": i}); err != nil {
						t.Error(err)
					}
				}
			}()
		}
	}
	wg.Wait()
	if rep := verify(t, path); !rep.OK() || rep.Records != 200 {
		t.Fatalf("report %+v %+v", rep, rep.Broken)
	}
}

// Real processes appending to one ledger file keep one chain.
func TestLedgerSeveralProcesses(t *testing.T) {
	if os.Getenv("AIRLOCK_LEDGER_CHILD") != "" {
		t.Skip("child")
	}
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	var cmds []*exec.Cmd
	for p := 0; p < 3; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerChildAppender$")
		cmd.Env = append(os.Environ(), "AIRLOCK_LEDGER_CHILD="+path, "AIRLOCK_LEDGER_ID="+strconv.Itoa(p))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if rep := verify(t, path); !rep.OK() || rep.Records != 150 {
		t.Fatalf("report %+v %+v", rep, rep.Broken)
	}
}

func TestLedgerChildAppender(t *testing.T) {
	path := os.Getenv("AIRLOCK_LEDGER_CHILD")
	if path == "" {
		t.Skip("run by TestLedgerSeveralProcesses")
	}
	l, err := ledger.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 50; i++ {
		if _, err := l.Append(ledger.KindRequest, map[string]string{"proc": os.Getenv("AIRLOCK_LEDGER_ID"), "i": fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// The anchor notices what a chain cannot: records cut from the end, and a
// ledger deleted or emptied. A crash between a record and its anchor is
// not tampering.
func TestLedgerAnchor(t *testing.T) {
	l := approvaltest.NewLedger(t)
	appendN(t, l, 5)
	path := l.Path()
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	if rep := verify(t, path); !rep.OK() || rep.Records != 5 {
		t.Fatalf("intact: %+v", rep)
	}
	anchor, _ := os.ReadFile(ledger.AnchorPath(path))

	// Cut the last two records.
	os.WriteFile(path, []byte(strings.Join(lines[:3], "")), 0o600)
	if rep, _ := ledger.Verify(path); rep.OK() || rep.Broken.Kind != "cut" || !strings.Contains(rep.Broken.Detail, "records 4 to 5 were removed") {
		t.Errorf("a cut tail: %+v", rep.Broken)
	}
	// A crash after record 5 but before its anchor: the anchor says 4.
	os.WriteFile(path, data, 0o600)
	var rec4 ledger.Record
	json.Unmarshal([]byte(lines[3]), &rec4)
	lag, _ := json.Marshal(ledger.Anchor{Seq: 4, Hash: rec4.Hash})
	os.WriteFile(ledger.AnchorPath(path), lag, 0o600)
	if rep := verify(t, path); !rep.OK() {
		t.Errorf("an anchor one record behind: %+v", rep.Broken)
	}
	os.WriteFile(ledger.AnchorPath(path), anchor, 0o600)
	// Deleted, or emptied: Verify fails, and no new chain starts there.
	l.Close()
	os.Remove(path)
	if _, err := ledger.Verify(path); !errors.Is(err, ledger.ErrLedgerGone) {
		t.Errorf("a deleted ledger: %v", err)
	}
	if _, err := ledger.Open(path); !errors.Is(err, ledger.ErrLedgerGone) {
		t.Errorf("opening over a deleted ledger: %v", err)
	}
	os.WriteFile(path, nil, 0o600)
	if _, err := ledger.Open(path); !errors.Is(err, ledger.ErrLedgerGone) {
		t.Errorf("opening an emptied ledger: %v", err)
	}
}

// Two crashes in a row, each between a record and its anchor, still leave
// a ledger that verifies: an append first brings a lagging anchor up to
// the head, so there is never more than one unanchored record.
func TestLedgerCrashesBeforeAnchorTwice(t *testing.T) {
	l := approvaltest.NewLedger(t)
	appendN(t, l, 3)
	crashAppend := func(i int) {
		t.Helper()
		reset := ledger.SetHookBeforeAnchor(func() { panic("crash") })
		defer reset()
		defer func() {
			if recover() == nil {
				t.Fatalf("append %d did not reach its anchor", i)
			}
		}()
		l.Append(ledger.KindRequest, map[string]int{"crash": i})
	}
	for i := range 3 {
		crashAppend(i)
		if rep := verify(t, l.Path()); !rep.OK() || rep.Records != 4+i {
			t.Fatalf("after crash %d: %d records, %+v", i+1, rep.Records, rep.Broken)
		}
		a, _, _ := ledger.ReadAnchor(l.Path())
		if a.Seq != uint64(3+i) {
			t.Fatalf("after crash %d the anchor says %d; want %d", i+1, a.Seq, 3+i)
		}
	}
	appendN(t, l, 1)
	if a, _, _ := ledger.ReadAnchor(l.Path()); a.Seq != 7 {
		t.Fatalf("after a whole append the anchor says %d; want 7", a.Seq)
	}
	if rep := verify(t, l.Path()); !rep.OK() || rep.Records != 7 {
		t.Fatalf("at the end: %d records, %+v", rep.Records, rep.Broken)
	}
}

// cutTail cuts the ledger's last record in half, as a power cut of an
// unsynced tail leaves it (the anchor still names that record).
func cutTail(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	last := lines[len(lines)-1]
	if err := os.WriteFile(path, []byte(strings.Join(lines[:len(lines)-1], "")+last[:len(last)/2]), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A record lost at the tail stays reported: the next append writes the
// loss into the chain (a cut record), and every later Verify, however much
// is appended after it, reports it; the anchor keeps it for the start.
func TestLedgerCutStaysCut(t *testing.T) {
	l := approvaltest.NewLedger(t)
	appendN(t, l, 5)
	path := l.Path()
	cutTail(t, path)
	if rep, _ := ledger.Verify(path); rep.Broken == nil || rep.Broken.Kind != "cut" || !strings.Contains(rep.Broken.Detail, "record 5 was removed") {
		t.Fatalf("before any append: %+v", rep.Broken)
	}
	notes, err := ledger.Notices(path)
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "record 5 is gone") {
		t.Fatalf("notices before the append: %q %v", notes, err)
	}
	for round := range 3 {
		appendN(t, l, 2)
		rep := verify(t, path)
		if rep.Broken != nil || rep.OK() {
			t.Fatalf("round %d: broken %+v, OK %v: the loss must be reported, not break the chain", round, rep.Broken, rep.OK())
		}
		if len(rep.Cuts) != 1 || !strings.Contains(rep.Cuts[0].Detail, "record 5 was lost") || rep.Cuts[0].Seq != 6 {
			t.Fatalf("round %d: cuts %+v", round, rep.Cuts)
		}
		if rep.Torn == nil {
			t.Errorf("round %d: the half record is no longer noted", round)
		}
		if want := 4 + 1 + 2*(round+1); rep.Records != want || rep.Seq != uint64(want+1) {
			t.Errorf("round %d: %d records up to %d, want %d up to %d", round, rep.Records, rep.Seq, want, want+1)
		}
		notes, err := ledger.Notices(path)
		if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "record 5 was lost") {
			t.Fatalf("round %d: notices %q %v", round, notes, err)
		}
	}
	recs, _ := ledger.Records(path)
	if what, ok := ledger.DescribeCut(recs[4]); !ok || !strings.Contains(what, "record 5 was lost") {
		t.Errorf("the cut record reads %q", what)
	}

	// A second loss is written down as well, after the first.
	cutTail(t, path)
	appendN(t, l, 1)
	rep := verify(t, path)
	if rep.Broken != nil || len(rep.Cuts) != 2 || !strings.Contains(rep.Cuts[1].Detail, "record 12 was lost") {
		t.Fatalf("a second cut: %+v %+v", rep.Broken, rep.Cuts)
	}
	if a, _, _ := ledger.ReadAnchor(path); len(a.Cuts) != 2 || a.Cuts[0].From != 5 || a.Cuts[1].From != 12 {
		t.Errorf("the anchor keeps %+v", a.Cuts)
	}

	// Taking the cut record out again (the rest relinked) while the
	// anchor remembers it is a rewrite.
	data, _ := os.ReadFile(path)
	var kept []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(line, `"kind":"cut"`) {
			kept = append(kept, line)
		}
	}
	os.WriteFile(path, []byte(strings.Join(kept, "")), 0o600)
	if rep, _ := ledger.Verify(path); rep.Broken == nil {
		t.Error("a ledger with its cut records taken out verifies")
	}
}

// A crash between a cut record and its anchor: the anchor one behind
// names the record the cut record says it found, so Verify forgives it,
// reports the loss, and the next append brings the anchor up.
func TestLedgerCrashAfterCutRecord(t *testing.T) {
	l := approvaltest.NewLedger(t)
	appendN(t, l, 3)
	before, _, _ := ledger.ReadAnchor(l.Path())
	cutTail(t, l.Path())
	func() {
		reset := ledger.SetHookBeforeAnchor(func() { panic("crash") })
		defer reset()
		defer func() {
			if recover() == nil {
				t.Fatal("the append did not reach the cut record's anchor")
			}
		}()
		l.Append(ledger.KindRequest, map[string]int{"after": 3})
	}()
	if a, _, _ := ledger.ReadAnchor(l.Path()); a.Seq != before.Seq || a.Hash != before.Hash {
		t.Fatalf("the crash came after the anchor moved: %+v", a)
	}
	rep := verify(t, l.Path())
	if rep.Broken != nil || len(rep.Cuts) != 1 || rep.Seq != 4 {
		t.Fatalf("after the crash: %+v %+v seq %d", rep.Broken, rep.Cuts, rep.Seq)
	}
	appendN(t, l, 1)
	rep = verify(t, l.Path())
	if rep.Broken != nil || len(rep.Cuts) != 1 || rep.Seq != 5 {
		t.Fatalf("after the next append: %+v %+v seq %d", rep.Broken, rep.Cuts, rep.Seq)
	}
	if a, _, _ := ledger.ReadAnchor(l.Path()); a.Seq != 5 || len(a.Cuts) != 1 || a.Cuts[0].At != 4 {
		t.Errorf("anchor %+v", a)
	}
}
