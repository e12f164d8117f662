//go:build unix

package session

import "syscall"

const (
	noFollow = syscall.O_NOFOLLOW
	openDir  = syscall.O_DIRECTORY
)
