//go:build !linux

package sandbox

import (
	"strings"

	"golang.org/x/sys/unix"
)

// openBeneath opens rel (slash-separated; "" is dir itself) below the
// directory dir with flags (O_CREAT's mode perm), one component at a
// time, each directory opened with O_NOFOLLOW from the one holding it, so
// that no symlink is followed, the last name's included.
func openBeneath(dir int, rel string, flags int, perm uint32) (int, error) {
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
