package mirror

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// A run's ~/.cache is an overlay whose upper layer the sandbox merges into
// the worker's cache after the run (sandbox's keepCache): the same overlay
// marks as the workspace's (overlay.go), read from paths, not from the
// mirror's descriptor, because the cache is a directory of its own.

// MergeLayer applies an overlay's upper layer to dst: directories made
// (an opaque one emptied first), whiteouts removed, files and symlinks
// written over what was there.
//
// Tools make what they extract read-only (Go's module cache: directories
// 0555, files 0444), and the merge acts as the jail's user, whom a
// directory's mode binds: each directory is writable by its owner while
// the merge writes into it, and takes the run's mode once its children
// are in, deepest first.
func MergeLayer(upper, dst string) error {
	type dirMode struct {
		path string
		perm fs.FileMode
	}
	var dirs []dirMode
	err := mergeWalk(upper, dst, func(to string, perm fs.FileMode) { dirs = append(dirs, dirMode{to, perm}) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if cerr := os.Chmod(dirs[i].path, dirs[i].perm); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// mergeWalk is MergeLayer's walk; made is told of each directory it made
// or took, and the mode the run left it with.
func mergeWalk(upper, dst string, made func(to string, perm fs.FileMode)) error {
	return filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(upper, p)
		if rel == "." {
			return nil
		}
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if old, err := os.Lstat(to); err == nil && (!old.IsDir() || isOpaquePath(p)) {
				if err := os.RemoveAll(to); err != nil {
					return err
				}
			}
			err := os.Mkdir(to, fi.Mode().Perm()|0o700)
			if errors.Is(err, fs.ErrExist) {
				err = os.Chmod(to, fi.Mode().Perm()|0o700)
			}
			if err != nil {
				return err
			}
			made(to, fi.Mode().Perm())
			return nil
		case isWhiteoutInfo(fi):
			// The run removed it.
			if err := os.RemoveAll(to); err != nil {
				return err
			}
			return nil
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.RemoveAll(to); err != nil {
				return err
			}
			return os.Symlink(target, to)
		case fi.Mode().IsRegular():
			if old, err := os.Lstat(to); err == nil && old.IsDir() {
				if err := os.RemoveAll(to); err != nil {
					return err
				}
			}
			return copyFile(p, to, fi)
		}
		return nil
	})
}

// copyFile writes src's content at dst (through a temporary name beside
// it: a reader never sees half a file), with its mode and times.
func copyFile(src, dst string, fi fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".airlock-merge"
	// Whatever an earlier run left at that name (a symlink) goes first:
	// the file is made new, never opened through a link.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, fi.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, fi.Mode().Perm())
	}
	if err == nil {
		err = os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		// The error that matters is err; a temporary name left
		// behind is the cache's, trimmed with it.
		_ = os.Remove(tmp)
	}
	return err
}

// isWhiteoutInfo is isWhiteout of what a walk found.
func isWhiteoutInfo(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && isWhiteout(st.Mode, uint64(st.Rdev))
}

// isOpaquePath reports whether the directory at p (not followed, were it
// a link) is marked opaque.
func isOpaquePath(p string) bool {
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(p, opaqueXattr, buf)
	return isOpaqueMark(buf, n, err)
}
