//go:build unix

package runcache

import (
	"io/fs"
	"os"
	"syscall"
)

// lockShared waits for a shared lock on f: runs share the cache, and only
// eviction (exclusive, never waiting) is kept out while one is in flight.
// The lock goes with f, or with the process.
func lockShared(f *os.File) error {
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != syscall.EINTR {
			return err
		}
	}
}

func tryLockExclusive(f *os.File) error {
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != syscall.EINTR {
			return err
		}
	}
}

func owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// diskBytes is what fi takes on the disk, as du counts it.
func diskBytes(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
