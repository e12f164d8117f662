package ledger

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/airlock-dev/airlock/internal/shortid"
)

// cutData is a cut record's data: what the anchor named and where the
// ledger ended when an append found the two apart.
type cutData struct {
	// From and To are the records lost, when the ledger ended before the
	// anchored record (From 0: none lost, the ledger was changed).
	From uint64 `json:"lost_from,omitempty"`
	To   uint64 `json:"lost_to,omitempty"`
	// Anchor is what the anchor named; HeadSeq and HeadHash the last
	// whole record the ledger held (0 and "": none).
	Anchor   Anchor `json:"anchor"`
	HeadSeq  uint64 `json:"head_seq"`
	HeadHash string `json:"head_hash"`
}

// CutMark is what the anchor keeps of a cut record.
type CutMark struct {
	At   uint64    `json:"at"` // the cut record's sequence number
	From uint64    `json:"lost_from,omitempty"`
	To   uint64    `json:"lost_to,omitempty"`
	Time time.Time `json:"time"`
}

func newCut(a Anchor, head Record) cutData {
	c := cutData{Anchor: Anchor{Seq: a.Seq, Hash: a.Hash}, HeadSeq: head.Seq, HeadHash: head.Hash}
	if head.Seq < a.Seq {
		c.From, c.To = head.Seq+1, a.Seq
	}
	return c
}

// Seq is the cut record's own number: the numbers of lost records are
// never given again (a record number names one record for good), so a
// cut record after a loss comes after the anchored one.
func (c cutData) Seq(head Record) uint64 {
	if c.From > 0 {
		return c.To + 1
	}
	return head.Seq + 1
}

func (c cutData) mark(rec Record) CutMark {
	return CutMark{At: rec.Seq, From: c.From, To: c.To, Time: rec.Time}
}

// lagging reports whether head is the one record after anchor a that a
// crash between a record and its anchor leaves, and returns the anchor
// brought up to it: the record after the anchored one, or a cut record
// that names the anchor (whose loss then joins the anchor's cuts).
func lagging(a Anchor, head Record) *Anchor {
	if head.Hash == "" || head.Seq <= a.Seq {
		return nil
	}
	if head.Kind != KindCut {
		if head.Seq == a.Seq+1 && head.Prev == a.Hash {
			return &Anchor{Seq: head.Seq, Hash: head.Hash, Cuts: a.Cuts}
		}
		return nil
	}
	c, ok := readCut(head)
	if !ok || c.Anchor.Seq != a.Seq || c.Anchor.Hash != a.Hash || head.Prev != c.HeadHash {
		return nil
	}
	return &Anchor{Seq: head.Seq, Hash: head.Hash, Cuts: append(append([]CutMark(nil), a.Cuts...), c.mark(head))}
}

// readCut reads a cut record's data, and checks that its number is the
// one its data implies.
func readCut(rec Record) (cutData, bool) {
	var c cutData
	if rec.Kind != KindCut || json.Unmarshal(rec.Data, &c) != nil || c.Seq(Record{Seq: c.HeadSeq}) != rec.Seq {
		return cutData{}, false
	}
	return c, true
}

// DescribeCut says what a cut record found, for people; ok is false for
// any other record.
func DescribeCut(rec Record) (string, bool) {
	c, ok := readCut(rec)
	if !ok {
		return "", false
	}
	return c.describe(rec.Seq, rec.Time), true
}

// describe says what a cut record found, for people.
func (c cutData) describe(at uint64, when time.Time) string {
	stamp := when.UTC().Format(time.RFC3339)
	if c.From > 0 {
		return fmt.Sprintf("%s lost: when record %d was written (%s), the ledger ended at record %d but its anchor named record %d (%s), as a power cut of an unsynced tail or a cut leaves it",
			lostRange(c.From, c.To, "was", "were"), at, stamp, c.HeadSeq, c.Anchor.Seq, shortid.Hex(c.Anchor.Hash))
	}
	return fmt.Sprintf("when record %d was written (%s), the ledger's last record was %d (%s), not record %d (%s) as its anchor said: the ledger had been changed outside airlock",
		at, stamp, c.HeadSeq, shortid.Hex(c.HeadHash), c.Anchor.Seq, shortid.Hex(c.Anchor.Hash))
}

func (m CutMark) describe() string {
	stamp := m.Time.UTC().Format(time.RFC3339)
	if m.From == 0 {
		return fmt.Sprintf("the ledger had been changed outside airlock before record %d was written (%s)", m.At, stamp)
	}
	return fmt.Sprintf("%s lost from the ledger's tail before record %d was written (%s)", lostRange(m.From, m.To, "was", "were"), m.At, stamp)
}

// lostRange names records from to to, with the verb that agrees: "record
// 5 was", "records 5 to 7 were".
func lostRange(from, to uint64, one, many string) string {
	if to > from {
		return fmt.Sprintf("records %d to %d %s", from, to, many)
	}
	return fmt.Sprintf("record %d %s", from, one)
}

// Notices says what is wrong with the ledger at path as far as its anchor
// and its last record tell, without reading the rest: every loss an
// append wrote down (the anchor keeps them), and a tail that does not
// match the anchor now (lost or changed since the last append, which the
// next append will write down). `airlock serve` prints them at start;
// Verify finds all of them, and more, by reading the whole ledger.
func Notices(path string) ([]string, error) {
	a, ok, err := ReadAnchor(path)
	if err != nil || !ok {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head, _, err := readHead(f)
	if err != nil {
		return nil, err
	}
	lag := lagging(a, head)
	if lag != nil {
		a = *lag
	}
	var out []string
	for _, m := range a.Cuts {
		out = append(out, m.describe())
	}
	if lag != nil || a.Seq == head.Seq && a.Hash == head.Hash {
		return out, nil
	}
	c := newCut(a, head)
	if c.From > 0 {
		out = append(out, fmt.Sprintf("the ledger ends at record %d, but its anchor names record %d: %s gone (a power cut of an unsynced tail, or a cut); the next record airlock writes says so for good",
			head.Seq, a.Seq, lostRange(c.From, c.To, "is", "are")))
	} else {
		out = append(out, fmt.Sprintf("the ledger's last record is %d (%s), not record %d (%s) as its anchor says: it was changed outside airlock; the next record airlock writes says so for good",
			head.Seq, shortid.Hex(head.Hash), a.Seq, shortid.Hex(a.Hash)))
	}
	return out, nil
}
