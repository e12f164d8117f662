//go:build linux && amd64

// Command sysprobe makes system calls as a jailed program would and says
// how the jail answered each, without ever letting one run. The sandbox's
// TestEveryRefusalOnEveryABI builds it and runs it inside a real jail.
//
//	sysprobe LABEL=ABI:NR:ARG0 ...
//
// ABI is x86_64 (the syscall instruction), x32 (the same, NR with
// __X32_SYSCALL_BIT) or i386 (int 0x80). For each call it prints one line:
// "LABEL errno N", "LABEL allowed", "LABEL killed by SIGNAL" or
// "LABEL returned N".
//
// How it tells the jail's answer from the kernel's: it adds a seccomp
// filter of its own below the jail's, which hands every call carrying its
// cookie (in the sixth argument, which none of the calls tried reads) to
// itself as a user notification, answered ELIBBAD without running the call.
// Filters stack and the kernel takes the strictest action, so a call the
// jail refuses returns the jail's errno (or is killed), and a call the jail
// allows reaches this supervisor and returns ELIBBAD: "allowed". Each call
// is made by a child process of its own (which inherits the filter), so a
// kill ends only its call.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cookie marks the probe's calls; the Go runtime never passes it.
const cookie = 0x5ecc0a1f

// allowedErrno is the supervisor's answer: an errno no seccomp policy of
// airlock's uses.
const allowedErrno = unix.ELIBBAD

const x32Bit = 0x40000000

// int80 makes an i386 system call through int 0x80 (int80_amd64.s); it
// returns eax, a negative errno on failure.
func int80(nr, a0, a1, a2, a3, a4, a5 uint32) int32

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-call" {
		os.Exit(call(os.Args[2]))
	}
	// The filter is the thread's, and the children are forked from it.
	runtime.LockOSThread()
	fd, err := listen()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sysprobe:", err)
		os.Exit(2)
	}
	go supervise(fd)
	for _, spec := range os.Args[1:] {
		label, c, ok := strings.Cut(spec, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "sysprobe: %q: want LABEL=ABI:NR:ARG0\n", spec)
			os.Exit(2)
		}
		fmt.Println(label, run(c))
	}
}

// run makes call c in a child process and says how it was answered.
func run(c string) string {
	var out bytes.Buffer
	cmd := exec.Command("/proc/self/exe", "-call", c)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + unix.SignalName(ws.Signal())
		}
	}
	if err != nil {
		return fmt.Sprintf("failed: %v %s", err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// call makes one call, ABI:NR:ARG0, and prints how it was answered.
func call(c string) int {
	f := strings.Split(c, ":")
	if len(f) != 3 {
		fmt.Fprintf(os.Stderr, "sysprobe: %q: want ABI:NR:ARG0\n", c)
		return 2
	}
	nr, err1 := strconv.ParseUint(f[1], 10, 32)
	a0, err2 := strconv.ParseUint(f[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, "sysprobe:", err)
		return 2
	}
	var ret int64
	switch f[0] {
	case "x86_64", "x32":
		if f[0] == "x32" {
			nr |= x32Bit
		}
		r, _, e := unix.Syscall6(uintptr(nr), uintptr(a0), 0, 0, 0, 0, cookie)
		ret = int64(r)
		if e != 0 {
			ret = -int64(e)
		}
	case "i386":
		ret = int64(int80(uint32(nr), uint32(a0), 0, 0, 0, 0, cookie))
	default:
		fmt.Fprintf(os.Stderr, "sysprobe: unknown ABI %q\n", f[0])
		return 2
	}
	switch {
	case ret == -int64(allowedErrno):
		fmt.Println("allowed")
	case ret < 0 && ret >= -4095:
		fmt.Println("errno", -ret)
	default:
		fmt.Println("returned", ret)
	}
	return 0
}

// listen adds the probe's filter to this thread and returns its
// notification descriptor.
func listen() (int, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("no_new_privs: %w", err)
	}
	const arg5 = 16 + 5*8 // struct seccomp_data: nr, arch, ip, args[6]
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: arg5},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 3, K: cookie},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: arg5 + 4},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: 0},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return -1, fmt.Errorf("seccomp user notification filter: %w", e)
	}
	return int(fd), nil
}

// supervise answers every notification allowedErrno, the call not run.
func supervise(fd int) {
	for {
		var req [80]byte // struct seccomp_notif, zeroed as the kernel wants
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req[0]))); e != 0 {
			if e == unix.EINTR || e == unix.ENOENT {
				continue
			}
			fmt.Fprintln(os.Stderr, "sysprobe: receiving a notification:", e)
			os.Exit(2)
		}
		var resp [24]byte // struct seccomp_notif_resp: id, val, error, flags
		copy(resp[0:8], req[0:8])
		neg := -int32(allowedErrno)
		binary.LittleEndian.PutUint32(resp[16:20], uint32(neg))
		// ENOENT: the caller is gone; nothing to answer.
		_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp[0])))
	}
}
