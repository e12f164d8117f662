//go:build unix

package gitenv

import (
	"os/exec"
	"syscall"
)

// detach starts git in a session of its own, with no controlling
// terminal: a repository's config may include /dev/tty (include.path),
// and git would read as config what someone types at the terminal
// airlock was started from, waiting until they do
// (TestConfigReadsNoTerminal). A new session has no terminal to open.
func detach(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
}
