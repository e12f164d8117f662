//go:build !linux

package mirror

import (
	"time"

	"golang.org/x/sys/unix"
)

// futimens sets the times of the open file fd to t (to the microsecond).
func futimens(fd int, t time.Time) error {
	tv := unix.NsecToTimeval(t.UnixNano())
	return unix.Futimes(fd, []unix.Timeval{tv, tv})
}
