//go:build unix

package worktree

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"golang.org/x/sys/unix"
)

// Writer writes files into a working tree without ever following a
// symlink that is in it: every directory on a path is opened relative to
// its parent with O_NOFOLLOW, so a symlinked directory planted in the tree
// (by a hostile commit, or by anyone) cannot redirect a write outside, and
// every path is checked by the workspace's guard first. New content is
// written under a short name in a private directory (.git/airlock/tmp) and
// renamed into place, so a file is never half written, a long name cannot
// overflow a temporary name, and no file of the user's is ever taken for
// a temporary one.
type Writer struct {
	root   int // the working tree's directory
	tmp    int // the private directory for new content
	prefix string
	n      int
}

// Open opens a writer into the working tree at worktree, with its
// temporary files in tmpDir (made if missing; never followed if a link).
func Open(worktree, tmpDir string) (*Writer, error) {
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return nil, err
	}
	root, err := unix.Open(worktree, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: worktree, Err: err}
	}
	tmp, err := unix.Open(tmpDir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(root)
		return nil, &os.PathError{Op: "open", Path: tmpDir, Err: err}
	}
	var b [4]byte
	rand.Read(b[:])
	return &Writer{root: root, tmp: tmp, prefix: hex.EncodeToString(b[:])}, nil
}

// Close lets go of the directories.
func (w *Writer) Close() {
	unix.Close(w.root)
	unix.Close(w.tmp)
}

// ErrUnsafePath: a path of the push leads through something airlock will
// not write through.
var ErrUnsafePath = errors.New("unsafe path in the working tree")

// dir opens the directory that holds rel, creating the missing ones when
// create is set. The caller closes the returned descriptor.
func (w *Writer) dir(rel string, create bool) (int, string, error) {
	if _, err := pathguard.CheckPath(rel); err != nil {
		return -1, "", fmt.Errorf("%w: %v", ErrUnsafePath, err)
	}
	parts := strings.Split(rel, "/")
	fd, err := unix.Dup(w.root)
	if err != nil {
		return -1, "", err
	}
	for i, name := range parts[:len(parts)-1] {
		next, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && create {
			if err = unix.Mkdirat(fd, name, 0o755); err == nil || err == unix.EEXIST {
				next, err = unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			at := strings.Join(parts[:i+1], "/")
			if err == unix.ELOOP || err == unix.ENOTDIR {
				return -1, "", fmt.Errorf("%w: %s is a symlink or a file, not a directory, so airlock will not write %s through it", ErrUnsafePath, at, rel)
			}
			return -1, "", &os.PathError{Op: "open", Path: at, Err: err}
		}
		fd = next
	}
	return fd, parts[len(parts)-1], nil
}

// Write puts data at rel with mode (data is a symlink's target for
// symlinks), replacing a file or an empty directory there.
func (w *Writer) Write(rel string, mode filemode.FileMode, data []byte) error {
	d, base, err := w.dir(rel, true)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	var st unix.Stat_t
	if err := unix.Fstatat(d, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := unix.Unlinkat(d, base, unix.AT_REMOVEDIR); err != nil {
			return fmt.Errorf("%s is a directory with files airlock does not know in it; move them away, then push again: %w", rel, err)
		}
	}
	w.n++
	tmpName := fmt.Sprintf("%s-%d", w.prefix, w.n)
	if err := w.create(tmpName, mode, data); err != nil {
		return err
	}
	err = unix.Renameat(w.tmp, tmpName, d, base)
	if err == unix.EXDEV {
		// The working tree is on another filesystem than its git
		// directory: write beside the file, under a short name. (The
		// temporary files go with the push's temporary directory.)
		_ = unix.Unlinkat(w.tmp, tmpName, 0)
		local := ".airlock-" + tmpName
		if err = w.createAt(d, local, mode, data); err == nil {
			if err = unix.Renameat(d, local, d, base); err != nil {
				_ = unix.Unlinkat(d, local, 0) // err says what failed; this is tidying
			}
		}
		return wrapPath("write", rel, err)
	}
	if err != nil {
		_ = unix.Unlinkat(w.tmp, tmpName, 0) // goes with the push's temporary directory
	}
	return wrapPath("write", rel, err)
}

func (w *Writer) create(name string, mode filemode.FileMode, data []byte) error {
	return w.createAt(w.tmp, name, mode, data)
}

func (w *Writer) createAt(d int, name string, mode filemode.FileMode, data []byte) error {
	if mode == filemode.Symlink {
		return unix.Symlinkat(string(data), d, name)
	}
	perm := uint32(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	fd, err := unix.Openat(d, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(os.FileMode(perm)) // the umask may have taken the x bit
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(d, name, 0) // err says what failed; this is tidying
	}
	return err
}

// Remove deletes the file or symlink at rel, if there is one, and the
// directories it leaves empty.
func (w *Writer) Remove(rel string) error {
	d, base, err := w.dir(rel, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = unix.Unlinkat(d, base, 0)
	unix.Close(d)
	if err != nil && err != unix.ENOENT {
		return wrapPath("remove", rel, err)
	}
	for dir := filepath.ToSlash(filepath.Dir(rel)); dir != "." && dir != "/"; dir = filepath.ToSlash(filepath.Dir(dir)) {
		pd, name, err := w.dir(dir, false)
		if err != nil {
			return nil
		}
		err = unix.Unlinkat(pd, name, unix.AT_REMOVEDIR)
		unix.Close(pd)
		if err != nil {
			return nil // not empty: it stays
		}
	}
	return nil
}

func wrapPath(op, rel string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: rel, Err: err}
}

// Stat says what the working tree holds at rel as git sees it, without
// following a symlink anywhere on the way and without opening anything but
// a regular file: a FIFO is never read. A path whose leading directories
// are missing, or go through a file or a symlink, holds nothing (git does
// not look through a symlink either); blocked says it is a regular file or
// a symlink on the way, which is the user's to keep, rather than a FIFO or
// a device (onWay says there is anything at all).
func (w *Writer) Stat(rel string) (Entry, error) {
	if _, err := pathguard.CheckPath(rel); err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrUnsafePath, err)
	}
	parts := strings.Split(rel, "/")
	fd, err := unix.Dup(w.root)
	if err != nil {
		return Entry{}, err
	}
	defer func() { unix.Close(fd) }()
	for _, name := range parts[:len(parts)-1] {
		next, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch err {
		case nil:
			unix.Close(fd)
			fd = next
			continue
		case unix.ENOENT:
			return Entry{Kind: Absent}, nil
		case unix.ELOOP, unix.ENOTDIR:
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return Entry{}, wrapPath("stat", rel, err)
			}
			t := st.Mode & unix.S_IFMT
			return Entry{Kind: Absent, OnWay: true, Blocked: t == unix.S_IFREG || t == unix.S_IFLNK}, nil
		default:
			return Entry{}, wrapPath("open", rel, err)
		}
	}
	base := parts[len(parts)-1]
	var st unix.Stat_t
	if err := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == unix.ENOENT {
		return Entry{Kind: Absent}, nil
	} else if err != nil {
		return Entry{}, wrapPath("stat", rel, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		sub, err := unix.Openat(fd, base, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return Entry{}, wrapPath("open", rel, err)
		}
		f := os.NewFile(uintptr(sub), rel)
		names, err := f.Readdirnames(1)
		f.Close()
		if len(names) == 0 && err != nil && !errors.Is(err, io.EOF) {
			return Entry{}, wrapPath("read", rel, err)
		}
		if len(names) == 0 {
			return Entry{Kind: Absent}, nil // git sees nothing in an empty directory
		}
		return Entry{Kind: Dir}, nil
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(fd, base, buf)
		if err != nil {
			return Entry{}, wrapPath("readlink", rel, err)
		}
		return Entry{Kind: Blob, Mode: filemode.Symlink, Hash: plumbing.ComputeHash(plumbing.BlobObject, buf[:n])}, nil
	case unix.S_IFREG:
		// O_NONBLOCK: should a FIFO take the file's place between the
		// stat and the open, the open does not wait for a writer.
		ffd, err := unix.Openat(fd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return Entry{}, wrapPath("open", rel, err)
		}
		f := os.NewFile(uintptr(ffd), rel)
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return Entry{}, err
		}
		if !fi.Mode().IsRegular() {
			return Entry{Kind: Other}, nil
		}
		h := plumbing.NewHasher(plumbing.BlobObject, fi.Size())
		if n, err := io.Copy(h, io.LimitReader(f, fi.Size()+1)); err != nil {
			return Entry{}, wrapPath("read", rel, err)
		} else if n != fi.Size() {
			// It changed while being read: someone is writing it, so it
			// is not as the push left it.
			return Entry{Kind: Other}, nil
		}
		mode := filemode.Regular
		if fi.Mode()&0o100 != 0 {
			mode = filemode.Executable
		}
		return Entry{Kind: Blob, Mode: mode, Hash: h.Sum()}, nil
	}
	return Entry{Kind: Other}, nil
}
