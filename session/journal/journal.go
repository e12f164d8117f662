package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/airlock-dev/airlock/internal/durable"
)

// magic starts every journal file; the version is in it.
const magic = "airlock journal 1\n"

// headerLen is a record's length (4 bytes), CRC-32C (4) and type (1).
const headerLen = 9

// MaxRecord bounds one record's payload; a larger length in a header is
// damage, not a record.
const MaxRecord = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt: the file is not a journal, or damaged before its tail.
var ErrCorrupt = errors.New("journal: corrupt")

// ErrReplaced: the file at the journal's path is not the one it writes
// (someone replaced it, or a directory on the way).
var ErrReplaced = errors.New("journal: the file at its path was replaced")

// Journal is an open journal file. It is safe for concurrent use.
type Journal struct {
	path string

	mu    sync.Mutex
	f     *os.File
	size  int64
	dirty bool // written since the last Sync
	// dirSync: a rewrite's rename is not yet flushed to the directory
	// (its fsync failed); Sync tries again.
	dirSync bool
}

// Batch is records to append together. Headers and small parts are
// copied into buffers of its own; a large part (a file's content) is
// referenced where it is, and written from there: a batch of ten
// thousand files costs no copy of them (on these machines, touching a
// fresh buffer of their size costs more than writing them).
type Batch struct {
	segs [][]byte // the batch's bytes, in order
	buf  []byte   // the buffer small parts are copied into
	open bool     // segs' last is buf: what small copies extends it
	size int
	n    int
}

// refMin is the size from which a part is referenced, not copied.
const refMin = 512

// batchChunk is the size of a batch's own buffers.
const batchChunk = 64 << 10

// small copies p to the end of the batch's own buffers.
func (b *Batch) small(p []byte) {
	for len(p) > 0 {
		switch {
		case len(b.buf) == cap(b.buf):
			b.buf = make([]byte, 0, batchChunk)
			b.segs = append(b.segs, nil)
		case !b.open:
			// A referenced part came after this buffer's last bytes:
			// its rest starts a segment of its own.
			b.buf = b.buf[len(b.buf):]
			b.segs = append(b.segs, nil)
		}
		k := min(len(p), cap(b.buf)-len(b.buf))
		b.buf = append(b.buf, p[:k]...)
		b.segs[len(b.segs)-1] = b.buf
		b.open = true
		p = p[k:]
	}
}

// Records is where records go: a Batch, or the stream a Rewrite writes.
type Records interface {
	// Add appends a record of type typ whose payload is parts, joined.
	Add(typ byte, parts ...[]byte)
}

// header is a record's header for a payload of parts.
func header(typ byte, parts [][]byte) [headerLen]byte {
	var h [headerLen]byte
	n := 0
	crc := crc32.Checksum([]byte{typ}, castagnoli)
	for _, p := range parts {
		n += len(p)
		crc = crc32.Update(crc, castagnoli, p)
	}
	binary.LittleEndian.PutUint32(h[0:], uint32(n))
	binary.LittleEndian.PutUint32(h[4:], crc)
	h[8] = typ
	return h
}

// Add appends a record of type typ to the batch. A part of refMin bytes
// or more is referenced, not copied: it must not change until the batch
// is written.
func (b *Batch) Add(typ byte, parts ...[]byte) {
	h := header(typ, parts)
	b.small(h[:])
	b.size += len(h)
	for _, p := range parts {
		if len(p) >= refMin {
			b.segs, b.open = append(b.segs, p), false
		} else {
			b.small(p)
		}
		b.size += len(p)
	}
	b.n++
}

// Len is the number of records in the batch.
func (b *Batch) Len() int { return b.n }

// Bytes is the size the batch takes in the file.
func (b *Batch) Bytes() int { return b.size }

// Reset empties the batch.
func (b *Batch) Reset() { *b = Batch{} }

// Open opens the journal at path, creating it (0600) when missing, and
// calls fn for each of its records in order up to the last one commit
// accepts (a commit record); the rest is a torn batch and is cut off
// before Open returns. fn's payload is only valid during the call.
func Open(path string, commit func(typ byte) bool, fn func(typ byte, payload []byte) error) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, err
	}
	j := &Journal{path: path, f: f}
	if err := j.load(commit, fn); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

func (j *Journal) load(commit func(byte) bool, fn func(byte, []byte) error) error {
	data, err := io.ReadAll(j.f)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		// A new journal (or one whose creation was cut before its magic).
		if _, err := j.f.WriteAt([]byte(magic), 0); err != nil {
			return err
		}
		j.size = int64(len(magic))
		return nil
	}
	if len(data) < len(magic) {
		if string(data) == magic[:len(data)] {
			// Its creation was cut short: nothing was ever committed.
			if err := j.f.Truncate(0); err != nil {
				return err
			}
			if _, err := j.f.WriteAt([]byte(magic), 0); err != nil {
				return err
			}
			j.size = int64(len(magic))
			return nil
		}
		return fmt.Errorf("%w: %s is not an airlock journal", ErrCorrupt, j.path)
	}
	if string(data[:len(magic)]) != magic {
		return fmt.Errorf("%w: %s is not an airlock journal (or of another version)", ErrCorrupt, j.path)
	}
	// First pass: where the last complete commit record ends.
	end := len(magic)
	for off := len(magic); ; {
		typ, payload, next, ok := record(data, off)
		if !ok {
			break
		}
		_ = payload
		if commit(typ) {
			end = next
		}
		off = next
	}
	for off := len(magic); off < end; {
		typ, payload, next, _ := record(data, off)
		if err := fn(typ, payload); err != nil {
			return err
		}
		off = next
	}
	if end < len(data) {
		if err := j.f.Truncate(int64(end)); err != nil {
			return err
		}
	}
	j.size = int64(end)
	return nil
}

// record decodes the record at off; ok is false at the end of data or at
// a record that is cut short or fails its check.
func record(data []byte, off int) (typ byte, payload []byte, next int, ok bool) {
	if len(data)-off < headerLen {
		return 0, nil, 0, false
	}
	n := binary.LittleEndian.Uint32(data[off:])
	if n > MaxRecord || uint64(len(data)-off-headerLen) < uint64(n) {
		return 0, nil, 0, false
	}
	typ = data[off+8]
	payload = data[off+headerLen : off+headerLen+int(n)]
	crc := crc32.Update(crc32.Checksum([]byte{typ}, castagnoli), castagnoli, payload)
	if crc != binary.LittleEndian.Uint32(data[off+4:]) {
		return 0, nil, 0, false
	}
	return typ, payload, off + headerLen + int(n), true
}

// Write appends the batch with one write. Once it returns, the records
// survive the process being killed.
func (j *Journal) Write(b *Batch) error {
	if b.n == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal: closed")
	}
	n, err := writeSegs(j.f, b.segs, j.size)
	if err != nil {
		// Whatever part was written is a torn batch: cut it off so the
		// next batch follows the last complete one.
		if n > 0 {
			if terr := j.f.Truncate(j.size); terr != nil {
				// The next batch is written at j.size, over it, and Open
				// drops whatever follows the last complete batch (a torn
				// batch never holds its state record whole): left, it
				// costs space, not correctness.
				err = errors.Join(err, fmt.Errorf("cutting off the torn batch: %w", terr))
			}
		}
		return fmt.Errorf("journal: writing %s: %w", j.path, err)
	}
	j.size += int64(n)
	j.dirty = true
	return nil
}

// Size is the file's length.
func (j *Journal) Size() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size
}

// Here reports whether the file at the journal's path is still the one
// it writes: nil, or an error that says what became of it (errors.Is
// os.ErrNotExist when it, or a directory on the way, was removed;
// ErrReplaced when another file is there). What was written to a file
// no path names is lost when the process ends: the owner writes the
// journal again (Rewrite) before it answers. It costs an lstat(2) of the
// path and an fstat(2).
func (j *Journal) Here() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal: closed")
	}
	at, err := os.Lstat(j.path)
	if err != nil {
		return err
	}
	mine, err := j.f.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(at, mine) {
		return fmt.Errorf("%w: %s", ErrReplaced, j.path)
	}
	return nil
}

// Sync flushes what was written to the disk, if anything was.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	if j.dirSync {
		if err := durable.SyncDir(filepath.Dir(j.path)); err != nil {
			return fmt.Errorf("journal: flushing the rename of %s: %w", j.path, err)
		}
		j.dirSync = false
	}
	if !j.dirty {
		return nil
	}
	if err := j.f.Sync(); err != nil {
		return err
	}
	j.dirty = false
	return nil
}

// Rewrite replaces the journal's whole content with the batch, atomically:
// a crash leaves either the old file or the new one.
func (j *Journal) Rewrite(b *Batch) error {
	return j.RewriteWith(func(r Records) error {
		sw := r.(*streamWriter)
		for _, seg := range b.segs {
			if _, err := sw.w.Write(seg); err != nil {
				return err
			}
		}
		return nil
	})
}

// streamWriter writes records straight to a file, for a rewrite that
// need not hold them all in memory.
type streamWriter struct {
	w   *bufio.Writer
	err error
}

func (s *streamWriter) Add(typ byte, parts ...[]byte) {
	if s.err != nil {
		return
	}
	h := header(typ, parts)
	_, s.err = s.w.Write(h[:])
	for _, p := range parts {
		if s.err == nil {
			_, s.err = s.w.Write(p)
		}
	}
}

// RewriteWith replaces the journal's whole content with the records fill
// adds, streamed to a new file that is synced and renamed over the old:
// a crash leaves either the old file or the new one. The journal's lock
// is held throughout.
func (j *Journal) RewriteWith(fill func(Records) error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal: closed")
	}
	tmp := j.path + ".new"
	// Whatever is there (a crash's leftover, or a link someone put
	// there) goes: the new file is one this process made.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: rewriting %s: %w", j.path, err)
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return fmt.Errorf("journal: rewriting %s: %w", j.path, err)
	}
	fail := func(err error) error {
		f.Close()
		_ = os.Remove(tmp) // best effort: the next rewrite truncates it anyway
		return fmt.Errorf("journal: rewriting %s: %w", j.path, err)
	}
	sw := &streamWriter{w: bufio.NewWriterSize(f, 1<<20)}
	sw.w.WriteString(magic)
	if err := fill(sw); err != nil {
		return fail(err)
	}
	if sw.err != nil {
		return fail(sw.err)
	}
	if err := sw.w.Flush(); err != nil {
		return fail(err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fail(err)
	}
	// The new file is the journal from here, whatever happens next: a
	// rename its directory did not flush yet is flushed by Sync (the
	// session's sync loop), which reports it until it succeeds.
	dirSync := durable.SyncDir(filepath.Dir(j.path)) != nil
	j.f.Close()
	j.f, j.size, j.dirty, j.dirSync = f, size, false, dirSync
	return nil
}

// Close syncs and closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	var err error
	if j.dirty {
		err = j.f.Sync()
	}
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f = nil
	return err
}

// Read calls fn for each record of the journal at path up to its last
// commit record, without changing the file: for reading a session another
// process may have open, or one a person inspects.
func Read(path string, commit func(typ byte) bool, fn func(typ byte, payload []byte) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		if len(data) < len(magic) && string(data) == magic[:len(data)] {
			return nil
		}
		return fmt.Errorf("%w: %s is not an airlock journal", ErrCorrupt, path)
	}
	end := len(magic)
	for off := len(magic); ; {
		typ, _, next, ok := record(data, off)
		if !ok {
			break
		}
		if commit(typ) {
			end = next
		}
		off = next
	}
	for off := len(magic); off < end; {
		typ, payload, next, _ := record(data, off)
		if err := fn(typ, payload); err != nil {
			return err
		}
		off = next
	}
	return nil
}

// Segments are the batch's bytes, in order (its records in the journal's
// format, without the file's magic): for a store that keeps a journal
// elsewhere than in a file (package natsstore). They are the batch's
// own: read, not changed, and only until the batch changes.
func (b *Batch) Segments() [][]byte { return b.segs }

// Decode calls fn for each whole record in data (records in the
// journal's format, as Segments gives them, without the magic), in
// order, and returns where the last whole one ends: a record cut short or
// failing its check ends it.
func Decode(data []byte, fn func(typ byte, payload []byte) error) (int, error) {
	off := 0
	for {
		typ, payload, next, ok := record(data, off)
		if !ok {
			return off, nil
		}
		if err := fn(typ, payload); err != nil {
			return off, err
		}
		off = next
	}
}
