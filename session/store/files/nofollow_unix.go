//go:build unix

package files

import "syscall"

const (
	noFollow = syscall.O_NOFOLLOW
	openDir  = syscall.O_DIRECTORY
)
