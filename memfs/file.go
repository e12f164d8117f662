package memfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/memfs/internal/resolve"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// OpenFile opens the named file with os.O_* flags, creating it with perm
// (and its parents) under os.O_CREATE. Writes through the handle count
// against the quotas at every call. The handle follows the file by path: if
// the file is removed, renamed or rolled back to a version from before it
// existed, the handle's operations fail with ErrStale.
func (w *Workspace) OpenFile(name string, flag int, perm fs.FileMode) (*File, error) {
	return w.openFile(resolve.Worker, name, flag, perm)
}

func (w *Workspace) openFile(v resolve.View, name string, flag int, perm fs.FileMode) (*File, error) {
	create, excl := flag&os.O_CREATE != 0, flag&os.O_EXCL != 0
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	lock := w.mu.RLock
	unlock := w.mu.RUnlock
	if create || flag&os.O_TRUNC != 0 {
		lock, unlock = w.mu.Lock, w.mu.Unlock
	}
	lock()
	defer unlock()
	f, err := w.find(v, "open", name, !(create && excl), false)
	if err != nil {
		return nil, err
	}
	n := f.Node
	switch {
	case len(f.Comps) == 0:
		return nil, pathErr("open", name, syscall.EISDIR)
	case n == nil && !create:
		return nil, notExist("open", name)
	case n != nil && create && excl:
		return nil, pathErr("open", name, fs.ErrExist)
	case n != nil && n.Kind == tree.KindDir:
		return nil, pathErr("open", name, syscall.EISDIR)
	case n != nil && n.Kind == tree.KindSymlink:
		// Only reachable with O_EXCL, which does not follow.
		return nil, pathErr("open", name, fs.ErrExist)
	}
	if n == nil || flag&os.O_TRUNC != 0 && writable && n.Size() > 0 {
		if err := w.storeLocked("open", name, f, nil, perm); err != nil {
			return nil, err
		}
		n = tree.Lookup(w.cur.root, f.Comps)
	}
	return &File{w: w, name: name, base: baseName(f.Comps, name), comps: f.Comps, ino: n.Ino, flag: flag, writable: writable}, nil
}

// File is an open file of a Workspace. It implements billy.File and fs.File,
// and is safe for concurrent use.
type File struct {
	w        *Workspace
	name     string   // as opened
	base     string   // the last element of name, for Stat
	comps    []string // canonical path
	ino      uint64
	flag     int
	writable bool

	mu     sync.Mutex
	off    int64
	closed bool

	// loaded is the content of the lazy version last read through this
	// handle: reading a file in chunks loads it once, not once a chunk
	// (the store's cache may not hold a large one between reads).
	loaded atomic.Pointer[loadedContent]
}

type loadedContent struct {
	n    *tree.Node
	data []byte
}

// Name returns the name the file was opened with.
func (f *File) Name() string { return f.name }

// node returns the file's current version; the caller holds f.w.mu.
func (f *File) node(op string) (*tree.Node, error) {
	n := tree.Lookup(f.w.cur.root, f.comps)
	if n == nil || n.Ino != f.ino || n.Kind != tree.KindFile {
		return nil, &Error{Op: op, Path: f.name, Err: ErrStale,
			Detail: "the file was removed, renamed or rolled back since it was opened; open it again"}
	}
	return n, nil
}

func (f *File) check(op string, write bool) error {
	if f.closed {
		return pathErr(op, f.name, fs.ErrClosed)
	}
	if write && !f.writable {
		return pathErr(op, f.name, errors.New("file not opened for writing"))
	}
	if !write && f.flag&(os.O_WRONLY|os.O_RDWR) == os.O_WRONLY {
		return pathErr(op, f.name, errors.New("file not opened for reading"))
	}
	return nil
}

func (f *File) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.readAt(p, f.off, "read")
	f.off += int64(n)
	if n > 0 && err == io.EOF {
		err = nil // io.Reader: report EOF on the next call
	}
	return n, err
}

// ReadAt reads at off without moving the file offset.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readAt(p, off, "read")
}

func (f *File) readAt(p []byte, off int64, op string) (int, error) {
	if err := f.check(op, false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr(op, f.name, syscall.EINVAL)
	}
	f.w.mu.RLock()
	defer f.w.mu.RUnlock()
	n, err := f.node(op)
	if err != nil {
		return 0, err
	}
	var data []byte
	if l := f.loaded.Load(); l != nil && l.n == n {
		data = l.data
	} else {
		if data, err = n.Content(op, f.name); err != nil {
			return 0, err
		}
		if n.Lazy != nil {
			f.loaded.Store(&loadedContent{n: n, data: data})
		}
	}
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	c := copy(p, data[off:])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

// Seek sets the offset for the next Read or Write.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, pathErr("seek", f.name, fs.ErrClosed)
	}
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = f.off
	case io.SeekEnd:
		f.w.mu.RLock()
		n, err := f.node("seek")
		if err == nil {
			base = n.Size()
		}
		f.w.mu.RUnlock()
		if err != nil {
			return 0, err
		}
	default:
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	if base+offset < 0 {
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	f.off = base + offset
	return f.off, nil
}

func (f *File) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.writeAt(p, f.off, f.flag&os.O_APPEND != 0)
	f.off += int64(n)
	return n, err
}

// WriteAt writes at off without moving the file offset.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flag&os.O_APPEND != 0 {
		return 0, pathErr("write", f.name, errors.New("WriteAt on a file opened with O_APPEND"))
	}
	return f.writeAt(p, off, false)
}

// writeAt writes p at off (at the end when appending); a write that would
// cross a quota writes nothing. Returns the bytes written, and moves f.off to
// the end for appends.
func (f *File) writeAt(p []byte, off int64, appending bool) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", f.name, syscall.EINVAL)
	}
	w := f.w
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := f.node("write")
	if err != nil {
		return 0, err
	}
	if appending {
		off = n.Size()
		f.off = off
	}
	end := off + int64(len(p))
	size := max(end, n.Size())
	if err := f.resize(n, size, func(data []byte) { copy(data[off:], p) }); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Truncate changes the file's size; growing it adds zero bytes.
func (f *File) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	n, err := f.node("truncate")
	if err != nil {
		return err
	}
	return f.resize(n, size, nil)
}

// resize sets n's size and applies edit to its content, within the quotas.
// A version of the current generation changes in place, so that streaming
// writes cost what they write; a frozen one is replaced by a copy.
func (f *File) resize(n *tree.Node, size int64, edit func([]byte)) error {
	w := f.w
	if err := w.fileTooBig("write", f.name, size); err != nil {
		return err
	}
	if n.Gen != w.gen || n.Lazy != nil {
		// Nothing of the old content survives a truncation to zero: a
		// lazy file whose content cannot be read can still be emptied
		// through a handle, as O_TRUNC empties it at open.
		var old []byte
		if size > 0 {
			var err error
			if old, err = n.Content("write", f.name); err != nil {
				return err
			}
		}
		data := resizeBytes(bytes.Clone(old), size)
		if edit != nil {
			edit(data)
		}
		t := w.begin()
		nn := t.ReplaceData(n, data)
		t.Dropped(n)
		t.Added(nn)
		if _, err := t.Put(f.comps, nn, false); err != nil {
			return pathErr("write", f.name, err)
		}
		t.Dirty = append(t.Dirty, strings.Join(f.comps, "/"))
		return t.commit("write", f.name)
	}
	next := w.cur.usage
	delta := size - int64(len(n.Data))
	next.Live.Bytes += delta
	next.Held.Bytes += delta
	if err := w.checkQuotaExact("write", f.name, &next); err != nil {
		return err
	}
	n.Data = resizeBytes(n.Data, size)
	if edit != nil {
		edit(n.Data)
	}
	n.Mtime, n.OID = w.now(), [20]byte{}
	w.cur.usage = next
	// A version of the current generation was made by a transaction that
	// marked its path already; marking again keeps that from being load-bearing.
	if p := strings.Join(f.comps, "/"); !w.isDirty(p) {
		w.cur.dirty = w.cur.dirty.Set(p, struct{}{})
	}
	return nil
}

func (w *Workspace) isDirty(p string) bool {
	_, ok := w.cur.dirty.Get(p)
	return ok
}

// resizeBytes returns b with length size, zero-filling growth. Capacity is
// kept near the length, in both directions, so that what a file holds in
// memory stays close to what the quota counts.
func resizeBytes(b []byte, size int64) []byte {
	n := int(size)
	switch {
	case n <= len(b):
		if cap(b) > 2*n+4096 {
			return bytes.Clone(b[:n])
		}
		return b[:n]
	case n <= cap(b):
		old := len(b)
		b = b[:n]
		clear(b[old:])
		return b
	}
	grown := make([]byte, n, n+min(n/4, 1<<20))
	copy(grown, b)
	return grown
}

// Close closes the file; a second Close fails.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	f.loaded.Store(nil)
	return nil
}

// Lock and Unlock satisfy billy.File. The workspace has no other processes
// to coordinate with, and its own operations are atomic.
func (f *File) Lock() error   { return nil }
func (f *File) Unlock() error { return nil }

// Stat describes the open file.
func (f *File) Stat() (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, pathErr("stat", f.name, fs.ErrClosed)
	}
	f.w.mu.RLock()
	defer f.w.mu.RUnlock()
	n, err := f.node("stat")
	if err != nil {
		return nil, err
	}
	return infoOf(f.base, n), nil
}

// fileInfo implements fs.FileInfo and fs.DirEntry.
type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func infoOf(name string, n *tree.Node) *fileInfo {
	fi := &fileInfo{name: name, mode: n.Mode(), mtime: n.Mtime}
	if n.Kind != tree.KindDir {
		fi.size = n.Size()
	}
	return fi
}

func (fi *fileInfo) Name() string               { return fi.name }
func (fi *fileInfo) Size() int64                { return fi.size }
func (fi *fileInfo) Mode() fs.FileMode          { return fi.mode }
func (fi *fileInfo) ModTime() time.Time         { return fi.mtime }
func (fi *fileInfo) IsDir() bool                { return fi.mode.IsDir() }
func (fi *fileInfo) Sys() any                   { return nil }
func (fi *fileInfo) Type() fs.FileMode          { return fi.mode.Type() }
func (fi *fileInfo) Info() (fs.FileInfo, error) { return fi, nil }
func (fi *fileInfo) String() string             { return fs.FormatFileInfo(fi) }
