//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
)

// The jail is built from Linux's namespaces, Landlock and seccomp; other
// systems get no run tool, never an unsandboxed one.

// Main returns at once: no helper runs here.
func Main() {}

// Available says why commands cannot run here.
func Available() error {
	return fmt.Errorf("%w: commands are sandboxed with Linux namespaces, Landlock and seccomp, and this is %s", ErrUnavailable, runtime.GOOS)
}

// Probe has nothing to start here.
func Probe() {}

// Probed is Available's answer, known at once here.
func Probed() (err error, done bool) { return Available(), true }

// Run refuses: see Available.
func Run(context.Context, Spec, io.Reader, io.Writer, io.Writer) (int, error) {
	return -1, Available()
}

// NetworkStack: no run, with the network or without, runs here.
func NetworkStack() error { return Available() }

// Shutdown has nothing to stop here.
func Shutdown() {}

// HostUser is this process's user.
func HostUser() (uid, gid int) { return os.Getuid(), os.Getgid() }

// CheckReachable has nothing to check where commands do not run.
func CheckReachable(string) error { return nil }

// Scratch is never known here: nothing runs.
func (r *Report) Scratch() (bytes, files int64, ok bool) { return 0, 0, false }

// Budget: nothing runs here.
func Budget(Limits) string { return "commands do not run here" }
