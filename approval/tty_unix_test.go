//go:build unix

package approval_test

import "syscall"

// noControllingTerminal starts a child in a new session, which has no
// controlling terminal.
func noControllingTerminal() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
