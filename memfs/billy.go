package memfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/airlock-dev/airlock/memfs/internal/resolve"
	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/helper/chroot"
)

// Billy returns the workspace as a billy.Filesystem, for go-git and other
// trusted code; never hand it to a worker. It keeps go-billy's conventions,
// which its own test suites check: paths may start with "/", "." and ".."
// are cleaned lexically, and a symlink's absolute target starts at the
// workspace root. Even so, nothing in this view can reach the host, names
// still pass the component rules (no ".git", no reserved names, no control
// characters), and the deny list still holds. Unlike go-billy's memfs it is
// safe for concurrent use, Rename touches only what it names, and creating a
// file under a regular file fails with ENOTDIR.
func (w *Workspace) Billy() billy.Filesystem { return chroot.New(&billyFS{w: w}, "/") }

// billyFS is the view go-billy's chroot helper wraps; the helper provides
// Chroot and Root.
type billyFS struct{ w *Workspace }

var (
	_ billy.Basic    = (*billyFS)(nil)
	_ billy.TempFile = (*billyFS)(nil)
	_ billy.Dir      = (*billyFS)(nil)
	_ billy.Symlink  = (*billyFS)(nil)
	_ billy.Chmod    = (*billyFS)(nil)
	_ billy.Capable  = (*billyFS)(nil)
	_ billy.File     = (*File)(nil)
)

func (b *billyFS) Create(name string) (billy.File, error) {
	return b.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (b *billyFS) Open(name string) (billy.File, error) { return b.OpenFile(name, os.O_RDONLY, 0) }

func (b *billyFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	f, err := b.w.openFile(resolve.Billy, name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (b *billyFS) Stat(name string) (os.FileInfo, error) { return b.w.stat(resolve.Billy, name, true) }
func (b *billyFS) Lstat(name string) (os.FileInfo, error) {
	return b.w.stat(resolve.Billy, name, false)
}
func (b *billyFS) Rename(from, to string) error         { return b.w.rename(resolve.Billy, from, to) }
func (b *billyFS) Remove(name string) error             { return b.w.remove(resolve.Billy, name, false) }
func (b *billyFS) Join(elem ...string) string           { return filepath.Join(elem...) }
func (b *billyFS) Symlink(target, link string) error    { return b.w.symlink(resolve.Billy, target, link) }
func (b *billyFS) Readlink(name string) (string, error) { return b.w.readlink(resolve.Billy, name) }
func (b *billyFS) Chmod(name string, mode os.FileMode) error {
	return b.w.chmod(resolve.Billy, name, mode)
}
func (b *billyFS) MkdirAll(name string, perm os.FileMode) error {
	return b.w.mkdirAll(resolve.Billy, name, perm)
}

func (b *billyFS) ReadDir(name string) ([]os.FileInfo, error) {
	infos, err := b.w.readDir(resolve.Billy, name)
	if err != nil {
		return nil, err
	}
	out := make([]os.FileInfo, len(infos))
	for i, fi := range infos {
		out[i] = fi
	}
	return out, nil
}

// TempFile creates a new file in dir (made if missing) whose name starts
// with prefix and is not taken.
func (b *billyFS) TempFile(dir, prefix string) (billy.File, error) {
	for {
		name := path.Join(dir, prefix+strconv.FormatUint(b.w.tempSeq.Add(1), 10))
		f, err := b.w.openFile(resolve.Billy, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return f, nil
	}
}

func (b *billyFS) Capabilities() billy.Capability { return billy.DefaultCapabilities }
