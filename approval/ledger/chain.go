package ledger

import (
	"encoding/json"
	"fmt"
	"time"
)

// The chain as such, apart from where it is kept: the file here, or a
// fleet's stream (package natsledger), which makes its records with Next
// and checks them with CheckChain, so that both hold one chain by the
// same rules.

// Next makes the record that follows head (the zero Record: the chain's
// first), of kind, with data (JSON already, or a value to marshal), at
// time t.
func Next(head Record, kind string, data any, t time.Time) (Record, error) {
	seq := head.Seq + 1
	if head.Hash == "" {
		seq = 1
	}
	return makeRecord(seq, head.Hash, t, kind, data)
}

// makeRecord makes record seq linked to the record whose hash is prev.
func makeRecord(seq uint64, prev string, t time.Time, kind string, data any) (Record, error) {
	raw, ok := data.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return Record{}, fmt.Errorf("ledger: encoding %s: %w", kind, err)
		}
	}
	rec := Record{Seq: seq, Time: t.UTC(), Kind: kind, Data: raw, Prev: prev}
	var err error
	if rec.Hash, err = rec.computeHash(); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// Entry is a record as read back, with its place where the ledger keeps
// it (Problem.Line names it): a line of the file, a stream's message.
type Entry struct {
	At  int
	Rec Record
}

// CheckChain checks every link of a chain read back, entries in the order
// they are kept: each record's own hash, its link to the record before,
// and sequence numbers without gaps or reversals. It fills rep (records,
// head, cuts) and sets rep.Broken at the first break. A rep.Broken set
// already is where reading stopped making sense: entries past it are not
// checked, and a break found before it takes its place. unit is what
// Entry.At counts (Problem.Unit).
func CheckChain(rep *Report, entries []Entry, unit string) { checkChain(rep, entries, nil, unit) }

// checkChain is CheckChain; hashes, when not nil, gets each good
// record's hash by number (for the anchor's check).
func checkChain(rep *Report, recs []Entry, hashes map[uint64]string, unit string) {
	seqAt := map[uint64]int{}
	for _, e := range recs {
		seqAt[e.Rec.Seq] = e.At
	}
	var prev *Record
	for i := range recs {
		e := &recs[i]
		if rep.Broken != nil && e.At > rep.Broken.Line {
			break
		}
		rec := &e.Rec
		p := func(kind, format string, args ...any) *Problem {
			return &Problem{Line: e.At, Seq: rec.Seq, Kind: kind, Detail: fmt.Sprintf(format, args...), Unit: unit}
		}
		want, herr := rec.computeHash()
		expect := uint64(1)
		if prev != nil {
			expect = prev.Seq + 1
		}
		var broken *Problem
		cut, isCut := readCut(*rec)
		switch {
		case herr != nil || want != rec.Hash:
			broken = p("edited", "the record's content does not match its hash")
		case rec.Seq != expect && seqAt[expect] > e.At:
			broken = p("reordered", "record %d comes before record %d", rec.Seq, expect)
		case rec.Seq < expect:
			broken = p("reordered", "record %d comes after record %d", rec.Seq, expect-1)
		case rec.Seq > expect && !(isCut && cut.From == expect && cut.To == rec.Seq-1):
			// Numbers are skipped only by a cut record naming the
			// records it found lost.
			broken = p("removed", "records %d to %d are missing", expect, rec.Seq-1)
		case rec.Kind == KindCut && !isCut:
			broken = p("malformed", "a cut record that does not say what was lost")
		case prev == nil && rec.Prev != "":
			broken = p("edited", "the first record links to a record before it")
		case prev != nil && rec.Prev != prev.Hash:
			broken = p("edited", "it does not link to record %d: one of them was changed or replaced", prev.Seq)
		}
		if broken != nil {
			rep.Broken = broken
			break
		}
		if isCut {
			rep.Cuts = append(rep.Cuts, *p("cut", "%s", cut.describe(rec.Seq, rec.Time)))
		}
		prev = rec
		if hashes != nil {
			hashes[rec.Seq] = rec.Hash
		}
		rep.Records++
		rep.Seq, rep.Head, rep.Last, rep.last = rec.Seq, rec.Hash, rec.Time, *rec
	}
}
