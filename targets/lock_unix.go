//go:build unix

package targets

import (
	"os"
	"os/exec"
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

// inheritLock makes cmd hold lock, a flock(2)ed file, as well: flock
// belongs to the open file, which the child shares (as its fd 3).
func inheritLock(cmd *exec.Cmd, lock *os.File) {
	if lock != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, lock)
	}
}
