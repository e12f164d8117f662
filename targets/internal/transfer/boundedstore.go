package transfer

import (
	"bytes"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Bounded is go-git's memory storage for a fetch, with every object
// of the fetched pack judged by the size it declares before anything is
// inflated: a small pack from a hostile server may hold an object (or a
// delta) that inflates to gigabytes. go-git hands a storage that is a
// storer.PackfileWriter the raw pack; it is held (compressed, within the
// sandbox's room), judged object by object, and only then parsed into the
// memory storage.
type Bounded struct {
	*memory.Storage
	Room func(size int64) error // the sandbox's room for size more bytes
}

func NewBounded(room func(int64) error) *Bounded {
	return &Bounded{Storage: memory.NewStorage(), Room: room}
}

// PackfileWriter implements storer.PackfileWriter.
func (s *Bounded) PackfileWriter() (io.WriteCloser, error) {
	return &packSink{s: s}, nil
}

type packSink struct {
	s   *Bounded
	buf bytes.Buffer
	err error
}

func (p *packSink) Write(b []byte) (int, error) {
	if p.err == nil {
		if err := p.s.Room(int64(p.buf.Len() + len(b))); err != nil {
			p.err = fmt.Errorf("%w (the fetched pack itself): %w", ErrTooLarge, err)
		}
	}
	if p.err != nil {
		return 0, p.err
	}
	return p.buf.Write(b)
}

func (p *packSink) Close() error {
	if p.err != nil {
		return p.err
	}
	if err := judgePack(p.buf.Bytes(), p.s.Room); err != nil {
		return err
	}
	return packfile.UpdateObjectStorage(p.s.Storage, bytes.NewReader(p.buf.Bytes()))
}

// judgePack reads a pack's object headers (and, for deltas, the size of
// the object they make) and refuses it when what it declares would not
// fit: nothing is inflated but deltas' first bytes.
func judgePack(pack []byte, room func(int64) error) error {
	sc := packfile.NewScanner(bytes.NewReader(pack))
	_, count, err := sc.Header()
	if err != nil {
		return err
	}
	var total int64
	for i := uint32(0); i < count; i++ {
		oh, err := sc.NextObjectHeader()
		if err != nil {
			return err
		}
		size := oh.Length
		if err := room(total + size); err != nil {
			return fmt.Errorf("%w (a %d-byte %s in the fetched pack, unread): %w", ErrTooLarge, size, oh.Type, err)
		}
		if oh.Type == plumbing.OFSDeltaObject || oh.Type == plumbing.REFDeltaObject {
			// The delta itself fits (checked above); what it makes is
			// declared at its start.
			head := &prefixWriter{max: 32}
			if _, _, err := sc.NextObject(head); err != nil {
				return err
			}
			if target, ok := deltaTargetSize(head.b); ok && target > size {
				size = target
			}
		}
		total += size
		if err := room(total); err != nil {
			return fmt.Errorf("%w (a %d-byte %s in the fetched pack, unread): %w", ErrTooLarge, size, oh.Type, err)
		}
	}
	return nil
}

// prefixWriter keeps the first max bytes written and drops the rest.
type prefixWriter struct {
	b   []byte
	max int
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	n := min(len(p), w.max-len(w.b))
	w.b = append(w.b, p[:n]...)
	return len(p), nil
}

// deltaTargetSize reads the size a delta's result has: the second of the
// two varints that begin a delta.
func deltaTargetSize(d []byte) (int64, bool) {
	read := func() (int64, bool) {
		var v int64
		for shift := uint(0); len(d) > 0 && shift < 63; shift += 7 {
			c := d[0]
			d = d[1:]
			v |= int64(c&0x7f) << shift
			if c&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	if _, ok := read(); !ok {
		return 0, false
	}
	return read()
}
