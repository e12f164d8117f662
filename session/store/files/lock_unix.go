//go:build unix

package files

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive lock on f without waiting; it fails when
// another process holds it. The lock goes when f is closed or the process
// dies, so a killed server never leaves its session locked.
func tryLock(f *os.File) error {
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != syscall.EINTR {
			return err
		}
	}
}
