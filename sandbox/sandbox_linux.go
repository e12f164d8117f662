package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// helperEnv marks the re-executed helper.
const helperEnv = "AIRLOCK_SANDBOX_HELPER"

// nobody is the host user a jail runs as when the server runs as root: a
// run must not act as root on the host's files, and RLIMIT_NPROC is not
// enforced for root.
const nobody = 65534

// HostUser returns the host user and group a jail's processes act as.
func HostUser() (uid, gid int) {
	if os.Getuid() == 0 {
		return nobody, nobody
	}
	return os.Getuid(), os.Getgid()
}

// Run runs spec in a new jail, with stdin, stdout and stderr as the
// command's, and returns its exit status (128+n for a signal n). When ctx
// ends first, every process of the run is killed and ctx's error returned.
func Run(ctx context.Context, spec Spec, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(spec.Argv) == 0 {
		return -1, errors.New("sandbox: nothing to run")
	}
	spec.Limits = spec.Limits.withDefaults()
	exe, err := os.Executable()
	if err != nil {
		return -1, fmt.Errorf("%w: finding airlock's own binary: %v", ErrUnavailable, err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return -1, err
	}
	uid, gid := HostUser()
	flags := syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
	if !spec.Network {
		flags |= syscall.CLONE_NEWNET
	}
	// The helper is exec'd through a descriptor, so that the jail's user
	// need not reach the binary's directory (a root server's may be 0700).
	self, err := os.Open(exe)
	if err != nil {
		specR.Close()
		specW.Close()
		errR.Close()
		errW.Close()
		return -1, fmt.Errorf("%w: opening airlock's own binary: %v", ErrUnavailable, err)
	}
	defer self.Close()
	cmd := exec.Command("/proc/self/fd/5")
	cmd.Args = []string{"airlock-sandbox"}
	cmd.Env = []string{helperEnv + "=1"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = []*os.File{specR, errW, self} // fd 3, 4 and 5
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 uintptr(flags),
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
		// Become the namespace's root, which is uid on the host: without
		// this a root server's helper would stay host root, unmapped.
		Credential: &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
	}
	if err := cmd.Start(); err != nil {
		specR.Close()
		specW.Close()
		errR.Close()
		errW.Close()
		return -1, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	specR.Close()
	errW.Close()
	json.NewEncoder(specW).Encode(spec)
	specW.Close()

	var setup bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(&setup, io.LimitReader(errR, 64<<10))
		errR.Close()
	}()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			// The helper is the PID namespace's init (or becomes the
			// command, which is): killing it kills every process of the run.
			cmd.Process.Kill()
		case <-done:
		}
	}()
	werr := cmd.Wait()
	close(done)
	wg.Wait()
	if msg := strings.TrimSpace(setup.String()); msg != "" {
		return -1, fmt.Errorf("%w: %s", ErrSetup, msg)
	}
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	var exit *exec.ExitError
	if errors.As(werr, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return exit.ExitCode(), nil
	}
	if werr != nil {
		return -1, werr
	}
	return 0, nil
}

// Available reports why the jail cannot be built here, or nil. It builds
// one and runs nothing in it but /bin/true.
func Available() error {
	availOnce.Do(func() { availErr = probe() })
	return availErr
}

var (
	availOnce sync.Once
	availErr  error
)

func probe() error {
	m, err := NewMirror(DefaultMirrorDir())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer m.Close()
	lower, upper, work, root := m.Dirs()
	var stderr bytes.Buffer
	code, err := Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Lower: lower, Upper: upper, Work: work, Root: root},
		nil, io.Discard, &stderr)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if code != 0 {
		return fmt.Errorf("%w: /bin/true exited %d in it: %s", ErrUnavailable, code, stderr.String())
	}
	return nil
}

// DefaultMirrorDir is where mirrors go unless the operator says otherwise:
// a per-user directory on /dev/shm (memory), else in the temporary
// directory.
func DefaultMirrorDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return filepath.Join("/dev/shm", fmt.Sprintf("airlock-%d", os.Getuid()))
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("airlock-%d", os.Getuid()))
}
