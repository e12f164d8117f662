//go:build unix

package gitenv

import (
	"os/exec"
	"syscall"
)

// detach starts git in a session of its own, with no controlling
// terminal: a repository's config may include /dev/tty (include.path),
// or its objects/info/alternates be a symlink to it, and git would read
// what someone types at the terminal airlock was started from, waiting
// until they do (TestConfigReadsNoTerminal). A new session has no
// terminal to open. A fetch of airlock's cannot prompt either (ssh asks
// for a passphrase or a host key there): git's own prompts are off
// already (GIT_TERMINAL_PROMPT=0), and an agent or askpass still works.
func detach(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
}
