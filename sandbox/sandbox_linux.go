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
	"strings"
	"sync"
	"syscall"

	"github.com/airlock-dev/airlock/internal/lockedwriter"
	"github.com/airlock-dev/airlock/sandbox/mirror"
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

// A helper is a started jail helper waiting for its spec: starting one
// (clone with new namespaces, exec, the Go runtime's start) is most of a
// run's overhead on machines where page faults are dear, so the next one is
// started while the current run is still going.
type helper struct {
	cmd            *exec.Cmd
	network        bool
	specW, errR    *os.File
	mountsW        *os.File   // the socket the detached mounts go on
	netW           *os.File   // the socket the run's listeners come on
	slirp          *netStack  // a run with the network's stack, or nil
	cg             *runCgroup // the run's cgroup, or nil (budget_linux.go)
	stdinW         *os.File
	stdoutR, errOR *os.File
}

// startHelper starts a helper; it waits for its spec on fd 3.
func startHelper(network bool) (*helper, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: finding airlock's own binary: %v", ErrUnavailable, err)
	}
	// The helper is exec'd through a descriptor, so that the jail's user
	// need not reach the binary's directory (a root server's may be 0700).
	self, err := os.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("%w: opening airlock's own binary: %v", ErrUnavailable, err)
	}
	defer self.Close()
	var parent, child []*os.File
	pipe := func() (r, w *os.File) {
		if err == nil {
			r, w, err = os.Pipe()
		}
		return r, w
	}
	specR, specW := pipe()
	errR, errW := pipe()
	stdinR, stdinW := pipe()
	stdoutR, stdoutW := pipe()
	errOR, errOW := pipe()
	mountsR, mountsW := socketPair(&err)
	netR, netW := socketPair(&err)
	parent = []*os.File{specW, errR, stdinW, stdoutR, errOR, mountsW, netW}
	child = []*os.File{specR, errW, stdinR, stdoutW, errOW, mountsR, netR}
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	if err != nil {
		closeAll(parent)
		closeAll(child)
		return nil, err
	}
	uid, gid := HostUser()
	// Every run has a network namespace of its own; one with the network
	// gets slirp4netns's tap in it (netstack_linux.go).
	flags := syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWNET
	cmd := exec.Command("/proc/self/fd/5")
	cmd.Args = []string{"airlock-sandbox"}
	cmd.Env = []string{helperEnv + "=1"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, errOW
	cmd.ExtraFiles = []*os.File{specR, errW, self, mountsR, netR} // fd 3, 4, 5, mountsFD and netFD
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 uintptr(flags),
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		// The helper dies with the server; Setpgid keeps a terminal's
		// signals meant for the server from reaching a run.
		Pdeathsig: syscall.SIGKILL,
		Setpgid:   true,
		// Become the namespace's root, which is uid on the host: without
		// this a root server's helper would stay host root, unmapped.
		Credential: &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
	}
	cg := newRunCgroup()
	if cg != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.fd.Fd())
	}
	err = cmd.Start()
	if err != nil && cg != nil {
		// The cgroup would not take it: without, the watch holds the
		// budget.
		cg.remove()
		cg = nil
		cmd.SysProcAttr.UseCgroupFD = false
		err = cmd.Start()
	}
	closeAll(child)
	if err != nil {
		closeAll(parent)
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	h := &helper{cmd: cmd, network: network, specW: specW, errR: errR, mountsW: mountsW, netW: netW, stdinW: stdinW, stdoutR: stdoutR, errOR: errOR, cg: cg}
	if network {
		if h.slirp, err = startSlirp(cmd.Process.Pid); err != nil {
			h.kill()
			return nil, err
		}
	}
	return h, nil
}

func (h *helper) kill() {
	h.cmd.Process.Kill()
	h.cmd.Wait()
	h.close()
	if h.cg != nil {
		h.cg.remove()
	}
}

func (h *helper) close() {
	for _, f := range []*os.File{h.specW, h.errR, h.mountsW, h.netW, h.stdinW, h.stdoutR, h.errOR} {
		f.Close()
	}
	h.slirp.stop()
	h.slirp = nil
}

// send gives the helper its spec and the detached mounts, its cgroup the
// run's budget first.
func (h *helper) send(spec Spec, detached []int) error {
	if h.cg != nil {
		if err := h.cg.limit(spec.Limits); err != nil {
			return err
		}
	}
	if err := json.NewEncoder(h.specW).Encode(spec); err != nil {
		return err
	}
	h.specW.Close()
	return sendMounts(h.mountsW, detached)
}

// socketPair is a connected pair of Unix stream sockets, unless *err is
// already set or it fails (which sets *err).
func socketPair(err *error) (*os.File, *os.File) {
	if *err != nil {
		return nil, nil
	}
	fds, e := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if e != nil {
		*err = e
		return nil, nil
	}
	return os.NewFile(uintptr(fds[0]), "mounts-helper"), os.NewFile(uintptr(fds[1]), "mounts")
}

// warm holds one started helper for each network setting.
var warm struct {
	sync.Mutex
	h [2]*helper
}

func slot(network bool) int {
	if network {
		return 1
	}
	return 0
}

// takeHelper returns the warm helper for network, or starts one, and
// starts the next in the background.
func takeHelper(network bool) (*helper, error) {
	warm.Lock()
	h := warm.h[slot(network)]
	warm.h[slot(network)] = nil
	warm.Unlock()
	go prewarm(network)
	if h != nil {
		return h, nil
	}
	return startHelper(network)
}

func prewarm(network bool) {
	h, err := startHelper(network)
	if err != nil {
		return
	}
	warm.Lock()
	defer warm.Unlock()
	if warm.h[slot(network)] != nil {
		h.kill()
		return
	}
	warm.h[slot(network)] = h
}

// Shutdown kills the warm helpers (a server's last act; tests).
func Shutdown() {
	warm.Lock()
	defer warm.Unlock()
	for i, h := range warm.h {
		if h != nil {
			h.kill()
			warm.h[i] = nil
		}
	}
}

// Run runs spec in a jail, with stdin, stdout and stderr as the command's,
// and returns its exit status (128+n for a signal n). When ctx ends first,
// every process of the run is killed and ctx's error returned.
func Run(ctx context.Context, spec Spec, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(spec.Argv) == 0 {
		return -1, errors.New("sandbox: nothing to run")
	}
	spec.Limits = spec.Limits.withDefaults()
	spec.Scratch = spec.Scratch.or(DefaultScratch)
	spec.CacheRoom = spec.CacheRoom.or(DefaultCacheRoom)
	report := spec.Report
	if report == nil {
		report = &Report{}
	}
	detached, err := detach(spec)
	if err != nil {
		return -1, err
	}
	defer closeFDs(detached)
	if spec.Network {
		spec.HostLocal = hostLocal()
	}
	h, err := readyHelper(spec, detached)
	if err != nil {
		return -1, err
	}
	defer h.close()
	if h.cg != nil {
		defer h.cg.remove()
	}
	if spec.Network {
		// Served from now (the helper sends its listeners once its
		// network is up) until the run ends.
		ns := serveNet(h.netW, spec.AllowHosts)
		defer ns.stop()
	}
	// The helper sends its stores once the jail is up (or closes the
	// socket, failing).
	storesC := make(chan storesHeld, 1)
	go func() {
		st, _ := receiveStores(h.mountsW)
		if st.scratch >= 0 {
			report.setScratch(st.scratch)
		}
		storesC <- st
	}()
	setup, streams := h.pipe(stdin, stdout, stderr)
	werr := h.wait(ctx, spec.Limits.Memory, report, streams)
	stores := <-storesC // the helper is gone: sent, or its end is closed
	report.setScratch(-1)
	defer stores.close()
	if msg := strings.TrimSpace(setup.String()); msg != "" {
		return -1, fmt.Errorf("%w: %s", ErrSetup, msg)
	}
	if stores.cache >= 0 {
		if err := keepCache(stores.cache, spec.Cache, spec.CacheRoom, report); err != nil {
			// The run's own answer stands: a cache may lose a part.
			report.CacheDropped = fmt.Sprintf("what the run wrote to ~/.cache could not all be kept (%v); a part of it may be", err)
		}
	}
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	return exitStatus(werr)
}

// readyHelper takes a helper (a warm one, else a new one) and gives it
// spec and the detached mounts.
func readyHelper(spec Spec, detached []int) (*helper, error) {
	h, err := takeHelper(spec.Network)
	if err != nil {
		return nil, err
	}
	if err := h.send(spec, detached); err == nil {
		return h, nil
	}
	// A warm helper that died meanwhile: start afresh once.
	h.kill()
	if h, err = startHelper(spec.Network); err != nil {
		return nil, err
	}
	if err := h.send(spec, detached); err != nil {
		h.kill()
		return nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	return h, nil
}

// pipe copies stdin to the helper and its output to stdout and stderr,
// and what it says of its setup into setup; streams is done when its
// output ends.
func (h *helper) pipe(stdin io.Reader, stdout, stderr io.Writer) (setup *bytes.Buffer, streams *sync.WaitGroup) {
	if stdout != nil && stdout == stderr {
		// One writer for both streams, as os/exec allows: copied from two
		// pipes, it must not be written by two goroutines at once.
		lw := lockedwriter.New(stdout)
		stdout, stderr = lw, lw
	}
	setup, streams = &bytes.Buffer{}, &sync.WaitGroup{}
	copyOut := func(w io.Writer, r io.Reader) {
		defer streams.Done()
		if w == nil {
			w = io.Discard
		}
		io.Copy(w, r)
	}
	streams.Add(3)
	go func() {
		defer streams.Done()
		io.Copy(setup, io.LimitReader(h.errR, 64<<10))
	}()
	go copyOut(stdout, h.stdoutR)
	go copyOut(stderr, h.errOR)
	go func() {
		if stdin != nil {
			io.Copy(h.stdinW, stdin)
		}
		h.stdinW.Close()
	}()
	return setup, streams
}

// wait waits for the run to end (killing it when ctx ends) and for its
// output, watching its memory where it has no cgroup; report says when
// the run was killed for its memory.
func (h *helper) wait(ctx context.Context, memory int64, report *Report, streams *sync.WaitGroup) error {
	done := make(chan struct{})
	memKilled := make(chan bool, 1)
	stopWatch := func() {}
	if h.cg == nil {
		var wctx context.Context
		wctx, stopWatch = context.WithCancel(ctx)
		defer stopWatch()
		// A kill that fails finds the run already over.
		kill := func() { _ = h.cmd.Process.Kill() }
		go func() { memKilled <- watchMemory(wctx, h.cmd.Process.Pid, memory, kill) }()
	}
	go func() {
		select {
		case <-ctx.Done():
			// The helper is the PID namespace's init (or becomes the
			// command, which is): killing it kills every process of the run.
			h.cmd.Process.Kill()
		case <-done:
		}
	}()
	werr := h.cmd.Wait()
	stopWatch()
	close(done)
	streams.Wait()
	if h.cg != nil && h.cg.oomKilled() || h.cg == nil && waitKilled(memKilled) {
		report.Killed = fmt.Sprintf("its processes together used more than the run's %d MiB of memory", memory>>20)
	}
	return werr
}

// exitStatus is the command's exit status as Run returns it.
func exitStatus(werr error) (int, error) {
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
// one and runs nothing in it but /bin/true, once a process: later calls
// wait for that first answer.
func Available() error {
	availOnce.Do(func() {
		availErr = probe()
		close(availDone)
	})
	return availErr
}

// Probe starts Available in the background: a server's start goes on
// while the jail is built once, and offers commands unless it turns out
// that it cannot be.
func Probe() { go Available() }

// Probed is Available's answer if it is known (done), without waiting.
func Probed() (err error, done bool) {
	select {
	case <-availDone:
		return availErr, true
	default:
		return nil, false
	}
}

var (
	availOnce sync.Once
	availErr  error
	availDone = make(chan struct{})
)

func probe() error {
	uid, gid := HostUser()
	m, err := mirror.New(mirror.DefaultDir(), uid, gid)
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
