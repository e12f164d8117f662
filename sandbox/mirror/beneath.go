package mirror

import (
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// A root server's mirror belongs to the jail's user (nobody), so any
// process of that user on the host may rename, remove or replace what is
// in it, a directory by a symlink included, between a check of the
// server's and its use. So the mirror is reached only through the
// descriptor of its own directory, opened once when it was made (under a
// parent only this server may write to): every path below it is resolved
// by the kernel in one step that refuses a symlink anywhere on the way,
// a mount point and a ".." out of it (openat2 with RESOLVE_BENEATH|
// RESOLVE_NO_SYMLINKS on Linux; elsewhere, or where openat2 is missing,
// one openat with O_NOFOLLOW a component), and every operation acts on a
// name in a directory so opened (mkdirat, renameat, unlinkat, fchownat
// without following, a file's mode and times set on its open descriptor). Whatever such a process swaps, the server writes,
// moves or reads nothing outside the mirror, and follows no link.

// openDirAt opens the directory rel (slash-separated, "" or "." is dir
// itself) below the directory dir, for use as the directory of *at calls.
func openDirAt(dir int, rel string) (int, error) {
	return openBeneath(dir, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
}

// parentAt opens the directory holding rel below dir and returns it with
// rel's last name; done closes it (dir itself is returned for a name
// directly in it, and not closed).
func parentAt(dir int, rel string) (fd int, name string, done func(), err error) {
	parent, name := path.Split(rel)
	if parent == "" {
		return dir, name, func() {}, nil
	}
	fd, err = openDirAt(dir, strings.TrimSuffix(parent, "/"))
	if err != nil {
		return -1, "", nil, err
	}
	return fd, name, func() { unix.Close(fd) }, nil
}

// lstatAt is lstat of name in the directory dir.
func lstatAt(dir int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// removeAt removes name from the directory dir, a file, a link or an empty
// directory alike; one that is not there is not an error.
func removeAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		err = unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
	}
	if err == unix.ENOENT {
		return nil
	}
	return err
}

// removeAllAt removes name from the directory dir with everything below
// it, never following a link: each directory is opened with O_NOFOLLOW
// from the one holding it.
func removeAllAt(dir int, name string) error {
	err := removeAt(dir, name)
	if err != unix.ENOTEMPTY && err != unix.EEXIST {
		return err
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	names, err := f.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if e := removeAllAt(fd, n); e != nil && err == nil {
				err = e
			}
		}
	}
	f.Close()
	if err != nil {
		return err
	}
	return removeAt(dir, name)
}

// listDir lists the open directory f, sorted by name. An entry's type is
// the directory's word for it (tmpfs and the usual disk filesystems keep
// one): what it is when acted on, by a call that follows nothing, decides.
func listDir(f *os.File) ([]fs.DirEntry, error) {
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, nil
}

// readlinkAt is the target of the symlink name in the directory dir.
func readlinkAt(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// openBeneathWalk is openBeneath one component at a time, each directory
// opened with O_NOFOLLOW from the one holding it, so that no symlink is
// followed, the last name's included, and no ".." taken; a mount point is
// crossed (where openat2 is missing, nothing says which are).
func openBeneathWalk(dir int, rel string, flags int, perm uint32) (int, error) {
	comps := strings.Split(rel, "/")
	if rel == "" {
		comps = []string{"."}
	}
	cur := dir
	defer func() {
		if cur != dir {
			unix.Close(cur)
		}
	}()
	for _, c := range comps[:len(comps)-1] {
		if c == ".." || c == "" || c == "." {
			return -1, unix.EXDEV
		}
		fd, err := unix.Openat(cur, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		if cur != dir {
			unix.Close(cur)
		}
		cur = fd
	}
	last := comps[len(comps)-1]
	if last == ".." {
		return -1, unix.EXDEV
	}
	return unix.Openat(cur, last, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
}
