package ledger

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/durable"
)

// Record is one event in the ledger.
type Record struct {
	Seq  uint64          `json:"seq"`
	Time time.Time       `json:"time"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
	Prev string          `json:"prev"` // hash of the record before; "" for the first
	Hash string          `json:"hash"` // SHA-256 of this record with Hash empty
}

// computeHash is the SHA-256 of the record's JSON encoding with Hash empty.
// The encoding is deterministic: fixed field order, and Data kept as the
// exact bytes that were written.
func (r Record) computeHash() (string, error) {
	r.Hash = ""
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// The kinds of records.
const (
	KindRequest    = "request"
	KindDecision   = "decision"
	KindPush       = "push"
	KindWithdrawal = "withdrawal"
	// KindCut records that the ledger did not end where its anchor said
	// when a record was added: records lost from the tail (a power cut
	// of an unsynced tail, or someone cutting it), or a ledger changed
	// outside airlock. Verify reports every such record, every time.
	KindCut = "cut"
	// KindRefused records a decision refused because no reviewer the
	// server trusts signed it over the request pending: a forgery (an
	// attack on the door), or a decision of a request that changed since
	// its reviewer saw it. It decided nothing.
	KindRefused = "refused"
)

// Ledger is an append-only, hash-chained log of requests and decisions in
// a JSON Lines file. Every record carries the hash of the one before, so
// editing, removing or reordering records breaks the chain, and Verify
// finds where. Append writes and fsyncs a record before it returns: a
// caller acts on an event only once it is on disk.
//
// Several processes may append to one ledger file: appends take an
// exclusive lock on the file and read the chain's head from the file
// itself, not from memory.
type Ledger struct {
	path string
	now  func() time.Time

	mu sync.Mutex
	f  *os.File
	// cuts are the anchor's cuts as this Ledger last wrote it: kept
	// when the ledger is written again after it was removed (follow.go).
	cuts []CutMark
}

// Open opens (creating it, and its directory, with owner-only
// permissions) the ledger at path.
func Open(path string) (*Ledger, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if a, ok, err := ReadAnchor(path); err == nil && ok && a.Seq > 0 {
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			// Starting a new chain here would hide that the old one went.
			return nil, fmt.Errorf("ledger: %w: %s is missing or empty, but its anchor %s says it held %d records; restore it from a backup, or move the anchor aside to start a new ledger",
				ErrLedgerGone, path, AnchorPath(path), a.Seq)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return &Ledger{path: path, now: time.Now, f: f}, nil
}

// Path is the ledger file's path.
func (l *Ledger) Path() string { return l.path }

// Close closes the file.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// Append writes one record of kind with data (marshalled as JSON) at the
// end of the chain, fsyncs it, and returns it.
func (l *Ledger) Append(kind string, data any) (Record, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Record{}, fmt.Errorf("ledger: encoding %s: %w", kind, err)
	}
	return l.append(kind, raw, nil)
}

// append writes raw; guard, when set, is asked first, under the file's
// lock with the head read, and an error from it writes nothing.
func (l *Ledger) append(kind string, raw json.RawMessage, guard func(*os.File) error) (Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := lockFile(l.f); err != nil {
		return Record{}, fmt.Errorf("ledger: lock: %w", err)
	}
	// l.f, as it is at the end: followPathLocked may change it. An
	// unlock fails only on a bad descriptor; closing releases it.
	defer func() { _ = unlockFile(l.f) }()
	if err := l.followPathLocked(); err != nil {
		return Record{}, err
	}

	head, torn, err := readHead(l.f)
	if err != nil {
		return Record{}, err
	}
	a, anchored, err := ReadAnchor(l.path)
	if err != nil {
		return Record{}, fmt.Errorf("ledger: %w", err)
	}
	if anchored {
		// The head must be what the anchor names, or one record past it
		// (a crash between a record and its anchor). Anything else is a
		// ledger cut short or changed since: that is written down in
		// the chain (a cut record) before anything is added, so that
		// every later Verify reports it, instead of the next anchor
		// covering it up.
		switch lag := lagging(a, head); {
		case lag != nil:
			// Brought up to the head before anything is added, so that
			// a second such crash still leaves just one unanchored
			// record, which is all Verify forgives.
			if err := writeAnchor(l.path, *lag); err != nil {
				return Record{}, fmt.Errorf("ledger: anchor: %w", err)
			}
			a = *lag
		case a.Seq != head.Seq || a.Hash != head.Hash:
			cut := newCut(a, head)
			rec, err := l.write(head, torn, cut.Seq(head), KindCut, cut)
			if err != nil {
				return Record{}, err
			}
			if testHookBeforeAnchor != nil {
				testHookBeforeAnchor()
			}
			a = Anchor{Seq: rec.Seq, Hash: rec.Hash, Cuts: append(a.Cuts, cut.mark(rec))}
			if err := writeAnchor(l.path, a); err != nil {
				return Record{}, fmt.Errorf("ledger: anchor: %w", err)
			}
			head, torn = rec, false
		}
	}
	if guard != nil {
		if err := guard(l.f); err != nil {
			return Record{}, err
		}
	}
	next := head.Seq + 1
	if head.Hash == "" {
		next = 1
	}
	rec, err := l.write(head, torn, next, kind, raw)
	if err != nil {
		return Record{}, err
	}
	// The anchor is written after the record: a crash between the two
	// leaves it one record behind, which Verify accepts and the next
	// append repairs.
	if testHookBeforeAnchor != nil {
		testHookBeforeAnchor()
	}
	if err := writeAnchor(l.path, Anchor{Seq: rec.Seq, Hash: rec.Hash, Cuts: a.Cuts}); err != nil {
		return Record{}, fmt.Errorf("ledger: anchor: %w", err)
	}
	l.cuts = a.Cuts
	return rec, nil
}

// Head returns the ledger's last whole record (the zero Record when it
// has none), as the file holds it now.
func (l *Ledger) Head() (Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := lockFile(l.f); err != nil {
		return Record{}, fmt.Errorf("ledger: lock: %w", err)
	}
	// An unlock fails only on a bad descriptor; closing releases it.
	defer func() { _ = unlockFile(l.f) }()
	head, _, err := readHead(l.f)
	return head, err
}

// First returns the ledger's first record (the zero Record when it has
// none): with the head, it names which chain the head belongs to.
func (l *Ledger) First() (Record, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return Record{}, err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 1<<16).ReadBytes('\n')
	if err != nil && err != io.EOF {
		return Record{}, err
	}
	var r Record
	if json.Unmarshal(bytes.TrimSuffix(line, []byte("\n")), &r) != nil || r.Hash == "" {
		return Record{}, nil
	}
	return r, nil
}

// write appends record seq of kind after head and fsyncs it. data is
// JSON already, or a value to marshal.
func (l *Ledger) write(head Record, torn bool, seq uint64, kind string, data any) (Record, error) {
	rec, err := makeRecord(seq, head.Hash, l.now(), kind, data)
	if err != nil {
		return Record{}, err
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return Record{}, err
	}
	if torn {
		// A crash left half a line. It stays (Verify reports it); the new
		// record starts on a line of its own.
		line = append([]byte{'\n'}, line...)
	}
	line = append(line, '\n')
	if _, err := l.f.Write(line); err != nil {
		return Record{}, fmt.Errorf("ledger: write: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return Record{}, fmt.Errorf("ledger: fsync: %w", err)
	}
	return rec, nil
}

// Anchor is the ledger's head and record count, kept in a file of its own
// (AnchorPath) so that a ledger cut short or deleted is noticed: a chain
// checks each record against the one before, but nothing in a file tells
// that records after its end were removed.
type Anchor struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
	// Cuts are the losses an append found and wrote down (see KindCut),
	// oldest first: the anchor keeps them whatever comes after, so that
	// `airlock serve` can say so at start without reading the ledger.
	Cuts []CutMark `json:"cuts,omitempty"`
}

// AnchorPath is where the anchor of the ledger at path lives.
func AnchorPath(path string) string { return path + ".anchor" }

// ReadAnchor reads the anchor of the ledger at path; ok is false when
// there is none (a ledger from before anchors, or a new one).
func ReadAnchor(path string) (a Anchor, ok bool, err error) {
	data, err := os.ReadFile(AnchorPath(path))
	if os.IsNotExist(err) {
		return Anchor{}, false, nil
	}
	if err != nil {
		return Anchor{}, false, err
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return Anchor{}, false, fmt.Errorf("%s is not an anchor: %w", AnchorPath(path), err)
	}
	return a, true, nil
}

// writeAnchor replaces the anchor atomically and durably.
func writeAnchor(path string, a Anchor) error {
	data, _ := json.Marshal(a)
	tmp := AnchorPath(path) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, AnchorPath(path))
	}
	if err != nil {
		_ = os.Remove(tmp) // best effort: the next anchor truncates it anyway
		return err
	}
	// The rename is durable only once the directory is flushed.
	return durable.SyncDir(filepath.Dir(path))
}

// testHookBeforeAnchor, when set by a test, runs between a record and its
// anchor: a panic there is a crash in that window.
var testHookBeforeAnchor func()

// ErrLedgerGone: the anchor says the ledger had records it no longer has.
var ErrLedgerGone = errors.New("ledger cut short or deleted")

// checkAnchor compares a verified chain with the anchor: the chain must
// end at the anchored record, with the anchored hash, and hold every cut
// record the anchor remembers. One record past the anchor is a crash
// between a record and its anchor, not tampering.
func checkAnchor(path string, rep *Report, recs map[uint64]string) error {
	a, ok, err := ReadAnchor(path)
	if err != nil || !ok {
		return err
	}
	last := rep.last
	lag := lagging(a, last)
	switch {
	case last.Seq == a.Seq && last.Hash == a.Hash:
	case lag != nil:
		a = *lag
	case last.Seq < a.Seq:
		rep.Broken = &Problem{Seq: last.Seq + 1, Kind: "cut", Detail: fmt.Sprintf(
			"the ledger ends after record %d, but its anchor (%s) says it had %d: %s removed (the next append records the loss in the ledger for good)",
			last.Seq, AnchorPath(path), a.Seq, lostRange(last.Seq+1, a.Seq, "was", "were"))}
		return nil
	case recs[a.Seq] != a.Hash:
		rep.Broken = &Problem{Seq: a.Seq, Kind: "edited", Detail: fmt.Sprintf(
			"record %d is not the one the anchor (%s) recorded: the ledger was rewritten from there on", a.Seq, AnchorPath(path))}
		return nil
	default:
		rep.Broken = &Problem{Seq: a.Seq + 2, Kind: "unanchored", Detail: fmt.Sprintf(
			"records after %d were not written by airlock (the anchor %s stops at %d)", a.Seq+1, AnchorPath(path), a.Seq)}
		return nil
	}
	cuts := map[uint64]bool{}
	for _, c := range rep.Cuts {
		cuts[c.Seq] = true
	}
	for _, m := range a.Cuts {
		if !cuts[m.At] {
			rep.Broken = &Problem{Seq: m.At, Kind: "edited", Detail: fmt.Sprintf(
				"the anchor (%s) remembers that %s, but the ledger's record %d does not say so: the ledger was rewritten", AnchorPath(path), m.describe(), m.At)}
			return nil
		}
	}
	return nil
}

// readHead returns the last complete record of the file, and whether the
// file ends in a torn line.
func readHead(f *os.File) (Record, bool, error) {
	st, err := f.Stat()
	if err != nil {
		return Record{}, false, err
	}
	size := st.Size()
	if size == 0 {
		return Record{}, false, nil
	}
	// Read backwards in chunks until a complete record is found.
	const chunk = 64 << 10
	var tail []byte
	torn := false
	for off := size; ; {
		n := int64(chunk)
		if off < n {
			n = off
		}
		off -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return Record{}, false, err
		}
		tail = append(buf, tail...)
		if off == size-n && tail[len(tail)-1] != '\n' {
			torn = true
		}
		lines := bytes.Split(bytes.TrimRight(tail, "\n"), []byte("\n"))
		// The first line may be cut by the chunk boundary unless off is 0.
		start := 0
		if off > 0 {
			start = 1
		}
		for i := len(lines) - 1; i >= start; i-- {
			var r Record
			if json.Unmarshal(lines[i], &r) == nil && r.Hash != "" {
				return r, torn, nil
			}
		}
		if off == 0 {
			return Record{}, torn, nil
		}
	}
}

// Problem is what Verify found wrong.
type Problem struct {
	Line   int    // 1-based line number in the file (a stream's message sequence: Unit)
	Seq    uint64 // the record's sequence number, when it could be read
	Kind   string // edited, removed, reordered, torn, malformed
	Detail string
	// Unit is what Line counts: "" for a file's lines, "message" for a
	// stream's messages (a fleet's ledger in NATS).
	Unit string
}

func (p Problem) Error() string {
	unit := p.Unit
	if unit == "" {
		unit = "line"
	}
	return fmt.Sprintf("ledger %s %d: %s: %s", unit, p.Line, p.Kind, p.Detail)
}

// Report is the result of Verify.
type Report struct {
	Records int       // complete, valid records
	Seq     uint64    // the last valid record's number
	Head    string    // hash of the last valid record
	Torn    *Problem  // a torn line (a crash mid-write), if any
	Broken  *Problem  // the first break in the chain, if any
	Last    time.Time // time of the last valid record
	// Cuts are the cut records of the chain (KindCut): records lost, or
	// a ledger changed outside airlock, that an append found and wrote
	// down. The chain goes on past them, but the ledger is not whole.
	Cuts []Problem

	last Record
}

// OK reports whether the ledger is whole: its chain intact and nothing
// ever lost from it. A torn line alone does not break the chain, but it
// is reported.
func (r Report) OK() bool { return r.Broken == nil && len(r.Cuts) == 0 }

// ErrBroken wraps the first problem Verify finds.
var ErrBroken = errors.New("ledger chain broken")

// Verify reads the ledger at path from the start and checks every link of
// the chain: each record's own hash, its link to the record before, and
// sequence numbers without gaps or reversals. It reports the first broken
// record, and a torn line if a crash left one.
//
// The chain is then held against the ledger's anchor: a ledger cut short,
// emptied or deleted while its anchor remains is broken (ErrLedgerGone for
// a missing file).
func Verify(path string) (Report, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		if a, ok, aerr := ReadAnchor(path); aerr == nil && ok && a.Seq > 0 {
			return Report{}, fmt.Errorf("%w: %s does not exist, but its anchor %s says it held %d records (head %s); restore it from a backup",
				ErrLedgerGone, path, AnchorPath(path), a.Seq, a.Hash)
		}
	}
	if err != nil {
		return Report{}, err
	}
	defer f.Close()
	hashes := map[uint64]string{}
	rep, err := verify(f, hashes)
	if err != nil || rep.Broken != nil {
		return rep, err
	}
	return rep, checkAnchor(path, &rep, hashes)
}

func verify(r io.Reader, hashes map[uint64]string) (Report, error) {
	var rep Report
	var recs []Entry
	br := bufio.NewReaderSize(r, 1<<16)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return rep, err
		}
		complete := bytes.HasSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\n"))
		var rec Record
		if json.Unmarshal(line, &rec) == nil && rec.Hash != "" {
			recs = append(recs, Entry{At: lineNo, Rec: rec})
			continue
		}
		// A torn line is followed by a newline only if something was
		// appended after it; anything unreadable that does not look like
		// the start of a record was put there.
		if complete && !looksTorn(line) {
			rep.Broken = &Problem{Line: lineNo, Kind: "malformed", Detail: "not a ledger record"}
			break
		}
		if rep.Torn == nil {
			rep.Torn = &Problem{Line: lineNo, Kind: "torn", Detail: "an incomplete record, as a crash in the middle of a write leaves; the chain continues from the record before it"}
		}
	}
	checkChain(&rep, recs, hashes, "")
	return rep, nil
}

// looksTorn reports whether an unreadable line is a prefix of a record, as
// a crash mid-write leaves, rather than something else put there.
func looksTorn(line []byte) bool {
	return bytes.HasPrefix(line, []byte(`{"seq":`)) || len(line) == 0
}

// Records reads every valid record of the ledger at path, oldest first,
// skipping torn lines. It stops at the first break.
func Records(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Hash != "" {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// Records reads l's records back, in order (see the function Records).
func (l *Ledger) Records() ([]Record, error) { return Records(l.path) }
