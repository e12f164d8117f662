package sandbox

import "golang.org/x/sys/unix"

// openBeneath opens rel (slash-separated; "" is dir itself) below the
// directory dir with flags (O_CREAT's mode perm), in one step that
// follows no symlink, the last name's included, and crosses no mount
// point and no "..". The descriptor is close-on-exec.
func openBeneath(dir int, rel string, flags int, perm uint32) (int, error) {
	if rel == "" {
		rel = "."
	}
	for {
		fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
			Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
			Mode:    uint64(perm),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
		})
		// EAGAIN: a rename elsewhere on the filesystem raced the lookup
		// (RESOLVE_BENEATH is strict about ".." races); try again.
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
}
