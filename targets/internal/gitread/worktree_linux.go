package gitread

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openBeneath opens the regular file rel (slash-separated) below the
// directory dirfd for reading: never through a symlink, a mount point or
// "..", never a FIFO or a device (opened without blocking, then checked).
// It returns the file and what stat says of it.
func openBeneath(dirfd int, rel string) (*os.File, fileStat, error) {
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if err != nil {
		return nil, fileStat{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fileStat{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fileStat{}, errors.New("not a regular file")
	}
	return os.NewFile(uintptr(fd), rel), fileStat{
		size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino, exec: st.Mode&0o100 != 0,
	}, nil
}

// openDir opens a directory to read files beneath it (openBeneath), or
// fails where openat2 is not there (Linux before 5.6).
func openDir(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if _, _, err := openBeneath(fd, "."); err != nil && errors.Is(err, unix.ENOSYS) {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func closeDir(fd int) { unix.Close(fd) }

// openIndex opens a working tree's index, which its repository may make
// anything: never through a symlink (to /dev/tty, say, read in airlock's
// own process), never a FIFO or a device (opened without blocking, then
// checked), so a read never waits on it (TestLazyReadOpensNoFIFOIndex).
func openIndex(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, errors.New("the index is not a regular file")
	}
	return os.NewFile(uintptr(fd), path), nil
}
