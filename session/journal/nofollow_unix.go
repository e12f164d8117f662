//go:build unix

package journal

import "syscall"

// noFollow: a journal is never opened through a symlink.
const noFollow = syscall.O_NOFOLLOW
