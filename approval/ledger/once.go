package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// AppendUnless appends one record of kind with data, as Append, unless
// check refuses one of the records after number after: check sees each
// of them, oldest first, under the file's lock, so that no other
// process's record can land between the check and the append. Its error
// is returned as it is, and nothing is written. It is how one decision
// per request holds across servers that share the ledger.
func (l *Ledger) AppendUnless(kind string, data any, after uint64, check func(Record) error) (Record, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Record{}, fmt.Errorf("ledger: encoding %s: %w", kind, err)
	}
	return l.append(kind, raw, func(f *os.File) error {
		recs, err := readSince(f, after)
		if err != nil {
			return fmt.Errorf("ledger: reading the records after %d: %w", after, err)
		}
		for _, r := range recs {
			if err := check(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// RecordsSince reads the ledger's records after number after, oldest
// first (what a reader that has seen up to after has not).
func (l *Ledger) RecordsSince(after uint64) ([]Record, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSince(f, after)
}

// readSince reads f backwards, a chunk at a time, until it holds a
// record numbered after or lower (or the file's start), and returns the
// whole records after it, oldest first. Recent records cost a read of
// the tail only, however long the ledger.
func readSince(f *os.File, after uint64) ([]Record, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const chunk = 64 << 10
	var tail []byte
	for off := st.Size(); off > 0; {
		n := min(int64(chunk), off)
		off -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return nil, err
		}
		tail = append(buf, tail...)
		lines := bytes.Split(tail, []byte("\n"))
		if off > 0 {
			lines = lines[1:] // may be cut by the chunk's start
		}
		if off > 0 && !reaches(lines, after) {
			continue
		}
		var out []Record
		for _, line := range lines {
			var r Record
			if json.Unmarshal(line, &r) == nil && r.Hash != "" && r.Seq > after {
				out = append(out, r)
			}
		}
		return out, nil
	}
	return nil, nil
}

// reaches reports whether the first record of lines is numbered after or
// lower: what comes before it in the file is not wanted.
func reaches(lines [][]byte, after uint64) bool {
	for _, line := range lines {
		var r Record
		if json.Unmarshal(line, &r) == nil && r.Hash != "" {
			return r.Seq <= after
		}
	}
	return false
}
