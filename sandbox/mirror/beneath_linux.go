package mirror

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 answered ENOSYS (a kernel before 5.6, or a
// container's seccomp profile that does not know it): the walk is used.
var noOpenat2 atomic.Bool

// openBeneath opens rel (slash-separated; "" is dir itself) below the
// directory dir with flags (O_CREAT's mode perm), in one step that
// follows no symlink, the last name's included, crosses no mount point
// and never climbs out of dir by "..". The descriptor is close-on-exec.
func openBeneath(dir int, rel string, flags int, perm uint32) (int, error) {
	if noOpenat2.Load() {
		return openBeneathWalk(dir, rel, flags, perm)
	}
	if rel == "" {
		rel = "."
	}
	for {
		fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
			Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
			Mode:    uint64(perm),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
		})
		if err == unix.ENOSYS {
			noOpenat2.Store(true)
			return openBeneathWalk(dir, rel, flags, perm)
		}
		// EAGAIN: a rename elsewhere on the filesystem raced the lookup
		// (RESOLVE_BENEATH is strict about ".." races); try again.
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
}
