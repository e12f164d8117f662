//go:build unix

package targets

import (
	"os"
	"syscall"
)

// flock takes an exclusive lock on f, shared with other airlock processes.
func flock(f *os.File) error {
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != syscall.EINTR {
			return err
		}
	}
}

func unflock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
