package mirror

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// futimens sets the access and modification times of the open file fd
// to t, to the nanosecond, without looking its path up again.
func futimens(fd int, t time.Time) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	// utimensat(fd, NULL, ts, 0) is futimens(3).
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
