//go:build unix

package ledger

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, waiting for other
// processes appending to the same ledger.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// noFollow keeps an open from following a link put where the ledger was.
const noFollow = syscall.O_NOFOLLOW
