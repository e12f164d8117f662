package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Main turns this process into a jail's helper when it was started as one,
// and never returns then; otherwise it returns at once. Call it first in
// main, and in TestMain of any test that runs commands.
func Main() {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	// Capabilities, the bounding set and the exec happen on one thread.
	runtime.LockOSThread()
	// Nothing of the parent's reaches the command: the spec, the error
	// pipe (whose EOF tells the parent the exec happened), the binary, the
	// socket the detached mounts come on and the one its listeners go on.
	for fd := 3; fd <= netFD; fd++ {
		unix.CloseOnExec(fd)
	}
	errPipe := os.NewFile(4, "setup-errors")
	fail := func(format string, args ...any) {
		fmt.Fprintf(errPipe, format, args...)
		os.Exit(125)
	}
	var spec Spec
	if err := json.NewDecoder(os.NewFile(3, "spec")).Decode(&spec); err != nil {
		fail("reading the run's spec: %v", err)
	}
	detached, err := receiveMounts(spec)
	if err != nil {
		fail("%v", err)
	}
	path, err := jail(spec, detached)
	if err != nil {
		fail("%v", err)
	}
	// errPipe is close-on-exec: the parent reads EOF once the command runs.
	err = syscall.Exec(path, spec.Argv, spec.Env)
	fail("exec %s: %v", spec.Argv[0], err)
}

// systemDirs are bound read-only from the host (or copied as symlinks on a
// merged-/usr system).
var systemDirs = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "opt"}

// etcEntries are what of the host's /etc a toolchain needs.
var etcEntries = []string{
	"alternatives", "ssl", "ca-certificates", "ca-certificates.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"localtime", "protocols", "services", "mime.types", "os-release", "debian_version",
	"java-17-openjdk", "python3", "python3.11", "perl", "gitconfig", "inputrc", "magic", "mke2fs.conf",
}

var devices = []string{"null", "zero", "full", "random", "urandom"}

// jail builds the view described in the package doc, restricts this
// process, and returns the path of the program to exec. detached holds a
// root server's detached mounts of the cache and the read-only paths (see
// detach), or nothing.
func jail(spec Spec, detached []int) (string, error) {
	root := spec.Root
	if spec.Network {
		if err := jailNetwork(spec); err != nil {
			return "", err
		}
	}
	if err := must("making mounts private", unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")); err != nil {
		return "", err
	}
	if err := must("mounting the root", unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=16m")); err != nil {
		return "", err
	}
	if err := hostFiles(root, spec.Network); err != nil {
		return "", err
	}
	if err := makeDev(root); err != nil {
		return "", err
	}
	if err := runMounts(spec, detached); err != nil {
		return "", err
	}
	if err := enterRoot(root); err != nil {
		return "", err
	}
	if err := restrictSelf(spec); err != nil {
		return "", err
	}
	dir := filepath.Join(Workspace, spec.Dir)
	if err := unix.Chdir(dir); err != nil {
		return "", fmt.Errorf("working directory %s: %w", spec.Dir, err)
	}
	path, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return "", err
	}
	// Last: this Go process's own address space may already be larger
	// than the limit it sets for the command.
	return path, limits(spec.Limits)
}

// must says what failed, when err is an error.
func must(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// hostFiles shows the host's system directories and the few files of its
// /etc a toolchain needs under root, read-only, and writes the jail's own
// /etc files (with the host's resolver only with the network).
func hostFiles(root string, network bool) error {
	for _, d := range systemDirs {
		if err := mirrorHost("/"+d, filepath.Join(root, d)); err != nil {
			return err
		}
	}
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		return err
	}
	for _, e := range etcEntries {
		if err := mirrorHost("/etc/"+e, filepath.Join(root, "etc", e)); err != nil {
			return err
		}
	}
	files := map[string]string{
		"etc/passwd":   "root:x:0:0:airlock sandbox:" + Home + ":/bin/sh\n",
		"etc/group":    "root:x:0:\n",
		"etc/hostname": "airlock\n",
	}
	if !network {
		for p, c := range ownResolver {
			files[p] = c
		}
	} else if err := bindResolver(root); err != nil {
		return err
	} else {
		files["etc/resolv.conf"] = resolvConf()
	}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// makeDev makes the jail's /dev: a few devices of the host's, bound;
// nothing else.
func makeDev(root string) error {
	dev := filepath.Join(root, "dev")
	if err := os.Mkdir(dev, 0o755); err != nil {
		return err
	}
	if err := must("mounting /dev", unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k")); err != nil {
		return err
	}
	for _, d := range devices {
		p := filepath.Join(dev, d)
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			return err
		}
		if err := must("binding /dev/"+d, unix.Mount("/dev/"+d, p, "", unix.MS_BIND, "")); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return nil
}

// runMounts mounts what is the run's own: the scratch, /proc, the
// workspace's overlay, the cache through its layer and the read-only
// paths; and hands the server the scratch's and the cache layer's
// descriptors.
func runMounts(spec Spec, detached []int) error {
	root := spec.Root
	stores := storesHeld{-1, -1}
	var err error
	if stores.scratch, err = mountScratch(root, spec.Scratch); err != nil {
		return err
	}
	proc := filepath.Join(root, "proc")
	if err := os.Mkdir(proc, 0o555); err != nil {
		return err
	}
	if err := must("mounting /proc", unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")); err != nil {
		return err
	}
	ws := filepath.Join(root, strings.TrimPrefix(Workspace, "/"))
	if err := os.Mkdir(ws, 0o755); err != nil {
		return err
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", spec.Lower, spec.Upper, spec.Work)
	if err := must("mounting the workspace", unix.Mount("overlay", ws, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts)); err != nil {
		return err
	}
	// The cache, through its layer, then the read-only paths: by the
	// detached mounts a root server sent, else by path.
	for i, p := range detachedPaths(spec) {
		fd := -1
		if len(detached) > 0 {
			fd = detached[i]
		}
		var err error
		if i == 0 && spec.Cache != "" {
			stores.cache, err = mountCache(root, p, fd, spec.CacheRoom)
		} else if fd >= 0 {
			err = attach(fd, filepath.Join(root, p), true)
		} else {
			err = bindPath(p, filepath.Join(root, p), true)
		}
		if err != nil {
			return must("the run's own paths", err)
		}
	}
	return must("handing the server the run's stores", sendStores(stores))
}

// enterRoot makes root this process's root, read-only; the host's is
// detached and gone.
func enterRoot(root string) error {
	old := filepath.Join(root, ".host")
	if err := os.Mkdir(old, 0o700); err != nil {
		return err
	}
	if err := must("pivot_root", unix.PivotRoot(root, old)); err != nil {
		return err
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := must("detaching the host's root", unix.Unmount("/.host", unix.MNT_DETACH)); err != nil {
		return err
	}
	if err := os.Remove("/.host"); err != nil {
		return err
	}
	return must("making the root read-only", unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""))
}

// restrictSelf restricts this process, in the new root, as the command
// will be: its network, Landlock, its capabilities and a seccomp filter.
func restrictSelf(spec Spec) error {
	unix.Sethostname([]byte("airlock"))
	// SysV shared memory outlives its processes' mappings, where the
	// memory watch cannot see it: the run's IPC namespace holds at most
	// the run's budget of it. Where the kernel does not let the namespace's
	// owner set that (before Linux 5.19), the run has no SysV shared memory.
	sysvShm := sysvBound(spec.Limits.Memory) == nil
	if !spec.Network {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if err := landlockRestrict(spec.ReadOnly); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	return seccompFilter(sysvShm)
}

// mirrorHost makes host path p appear at dst, read-only: a directory or
// file by a bind mount, a symlink as the same symlink. A missing p is
// skipped.
func mirrorHost(p, dst string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		return bindPath(p, dst, true)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	target, err := os.Readlink(p)
	if err != nil {
		return err
	}
	return os.Symlink(target, dst)
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

func limits(l Limits) error {
	for _, r := range []struct {
		res  int
		max  uint64
		name string
	}{
		{unix.RLIMIT_AS, uint64(l.Memory), "memory"},
		{unix.RLIMIT_NPROC, uint64(l.Procs), "processes"},
		{unix.RLIMIT_CPU, uint64(l.CPU.Seconds()), "CPU time"},
		{unix.RLIMIT_FSIZE, uint64(l.FileSize), "file size"},
		{unix.RLIMIT_NOFILE, uint64(l.Files), "open files"},
		{unix.RLIMIT_CORE, 0, "core dumps"},
	} {
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: r.max, Max: r.max}); err != nil {
			return fmt.Errorf("limiting %s: %w", r.name, err)
		}
	}
	return nil
}

// landlockRestrict allows reading the system and writing the workspace,
// the home, /tmp and /dev/shm; nothing else, whatever is mounted.
func landlockRestrict(extra []string) error {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1) // LANDLOCK_CREATE_RULESET_VERSION
	if errno != 0 || abi < 1 {
		return fmt.Errorf("this kernel has no Landlock (%v): refusing to run without it", errno)
	}
	ro := []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc", "/proc"}
	rules := []landlock.Rule{
		landlock.RODirs(ro...).IgnoreIfMissing(),
		landlock.RODirs(extra...).IgnoreIfMissing(),
		landlock.RWDirs(Workspace, Home, "/tmp", "/dev/shm"),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full"),
		landlock.ROFiles("/dev/random", "/dev/urandom"),
		landlock.RODirs("/dev"),
	}
	if err := landlock.V5.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("restricting paths with Landlock: %w", err)
	}
	// Where the kernel has them (ABI 6): no signals to processes outside
	// the run, no connecting to abstract Unix sockets made outside it.
	if err := landlock.V6.BestEffort().RestrictScoped(); err != nil {
		return fmt.Errorf("restricting signals and abstract sockets with Landlock scopes: %w", err)
	}
	return nil
}

// dropCapabilities empties this thread's bounding, ambient and inheritable
// sets, so the exec'd command has no capability even as uid 0 of its
// user namespace.
func dropCapabilities() error {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d: %w", c, err)
		}
	}
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, errno := unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("dropping capabilities: %w", errno)
	}
	return nil
}

// deniedSyscalls are refused with EPERM: debugging other processes,
// mounting, namespaces, keyrings, BPF, kernel modules and the like.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"unshare", "setns", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"swapon", "swapoff", "reboot", "acct", "quotactl", "syslog", "iopl", "ioperm",
	"settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "name_to_handle_at", "open_by_handle_at",
}

// cloneNewFlags are clone(2)'s flags that make a namespace. A run holds no
// capability, but a new user namespace would give it every capability
// there, and over the network namespace it makes with it: the kernel's
// netfilter and netlink surface. (CLONE_NEWTIME only clone3 and unshare
// take: clone's low byte is the exit signal.)
const cloneNewFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// absentSyscalls answer ENOSYS, as a kernel without them would, so that
// programs fall back to what they did before them. clone3: its flags are
// in memory a filter cannot read; libc (glibc 2.34 and later, for threads
// and posix_spawn) falls back to clone, whose flags it can. io_uring: a
// large kernel surface whose submissions (reads, writes, connects, opens
// made by the kernel from a shared ring) seccomp never sees, the source of
// many a kernel exploit, and gone from Docker's and containerd's default
// profiles since 2023; liburing's users and runtimes (Tokio, libuv,
// QEMU...) fall back to ordinary system calls on ENOSYS.
var absentSyscalls = []string{"clone3", "io_uring_setup", "io_uring_enter", "io_uring_register"}

// foreignABIErrno answers every system call made through another ABI than
// the native one: on x86_64, x32's (go-seccomp-bpf's own filter) and
// i386's (nativeOnlyFilter).
const foreignABIErrno = unix.ENOSYS

// policy is the run's seccomp filter: deniedSyscalls refused with EPERM;
// clone with any CLONE_NEW* flag likewise (threads and processes, which
// Go's runtime and libc make with clone, have none); absentSyscalls
// answered ENOSYS. sandbox's TestEveryRefusalOnEveryABI makes each call
// it names, on each ABI, inside a real jail: a call added here is tested.
func policy() seccomp.Policy {
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: deniedSyscalls},
			{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{Name: "clone", Conditions: seccomp.ArgumentConditions{
				{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNewFlags}}}}},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: absentSyscalls},
		},
	}
}

// sysvBound bounds the SysV shared memory of the run's IPC namespace
// (shmall, in pages, and shmmax) to max bytes.
func sysvBound(max int64) error {
	page := int64(unix.Getpagesize())
	if err := os.WriteFile("/proc/sys/kernel/shmmax", []byte(strconv.FormatInt(max, 10)), 0); err != nil {
		return err
	}
	return os.WriteFile("/proc/sys/kernel/shmall", []byte(strconv.FormatInt(max/page, 10)), 0)
}

// seccompFilter loads the run's filters; sysvShm false refuses SysV
// shared memory (its namespace could not be bounded).
func seccompFilter(sysvShm bool) error {
	p := policy()
	if !sysvShm {
		p.Syscalls = append(p.Syscalls, seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"shmget"}})
	}
	if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: p}); err != nil {
		return err
	}
	return nativeOnlyFilter()
}

// nativeOnlyFilter refuses every system call made through another ABI
// than the native one (on x86_64, int 0x80's i386 calls): go-seccomp-bpf
// lets a call of a foreign architecture through to its default action,
// allow, so without this unshare, mount, ptrace and every other call
// refused above would be allowed under their i386 numbers. A second
// filter, since filters stack and the strictest answer wins.
func nativeOnlyFilter() error {
	info, err := arch.GetInfo("")
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	const archOffset = 4 // struct seccomp_data: int nr; __u32 arch; ...
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: archOffset},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: uint32(info.ID)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(foreignABIErrno)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp: refusing foreign system call ABIs: %w", errno)
	}
	return nil
}

// lookPath finds name in the PATH of env, as a shell would.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, ":") {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found in PATH %s", name, path)
}
