//go:build unix

package review_test

import "syscall"

// noControllingTerminal starts a child in a new session, which has no
// controlling terminal.
func noControllingTerminal() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
