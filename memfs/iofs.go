package memfs

import (
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// FS returns a read-only io/fs view of the workspace under the worker's
// rules: the path guard, the deny list (denied entries are not listed) and
// the symlink policy.
func (w *Workspace) FS() fs.FS { return ioFS{w} }

type ioFS struct{ w *Workspace }

var (
	_ fs.ReadFileFS = ioFS{}
	_ fs.ReadDirFS  = ioFS{}
	_ fs.StatFS     = ioFS{}
	_ fs.ReadLinkFS = ioFS{}
)

func invalid(op, name string) error { return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid} }

func (x ioFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("open", name)
	}
	w := x.w
	w.mu.RLock()
	defer w.mu.RUnlock()
	f, err := w.resolve("open", name, true, true)
	if err != nil {
		return nil, err
	}
	switch {
	case f.Node == nil:
		return nil, notExist("open", name)
	case f.Node.Kind == tree.KindDir:
		return &dirFile{name: name, info: infoOf(baseName(f.Comps, name), f.Node), entries: w.listLocked(f)}, nil
	}
	return &File{w: w, name: name, base: baseName(f.Comps, name), comps: f.Comps, ino: f.Node.Ino, flag: os.O_RDONLY}, nil
}

func (x ioFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("read", name)
	}
	return x.w.ReadFile(name)
}

func (x ioFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("readdir", name)
	}
	return x.w.ReadDir(name)
}

func (x ioFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("stat", name)
	}
	return x.w.Stat(name)
}

func (x ioFS) Lstat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("lstat", name)
	}
	return x.w.Lstat(name)
}

func (x ioFS) ReadLink(name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", invalid("readlink", name)
	}
	return x.w.Readlink(name)
}

// dirFile is an open directory of the io/fs view: a listing taken at Open.
type dirFile struct {
	name    string
	info    *fileInfo
	entries []*fileInfo
	off     int
	closed  bool
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: syscall.EISDIR}
}

func (d *dirFile) Close() error {
	if d.closed {
		return &fs.PathError{Op: "close", Path: d.name, Err: fs.ErrClosed}
	}
	d.closed = true
	return nil
}

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n > 0 {
		if len(rest) == 0 {
			return nil, io.EOF
		}
		rest = rest[:min(n, len(rest))]
	}
	d.off += len(rest)
	out := make([]fs.DirEntry, len(rest))
	for i, e := range rest {
		out[i] = e
	}
	return out, nil
}
