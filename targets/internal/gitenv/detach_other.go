//go:build !unix

package gitenv

import "os/exec"

// detach does nothing where there is no session to leave.
func detach(*exec.Cmd) {}
