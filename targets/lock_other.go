//go:build !unix

package targets

import (
	"os"
	"os/exec"
)

func flock(*os.File) error            { return nil }
func unflock(*os.File) error          { return nil }
func inheritLock(*exec.Cmd, *os.File) {}
