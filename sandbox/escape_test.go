package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/sandbox"
)

// runSpec runs script in j's jail with limits, and returns its exit code
// and what it printed (stdout and stderr together).
func (j *jail) runWith(script string, lim sandbox.Limits, timeout time.Duration) (int, string, error) {
	j.t.Helper()
	lower, upper, work, root := j.m.Dirs()
	spec := sandbox.Spec{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + sandbox.Home},
		Lower: lower, Upper: upper, Work: work, Root: root, Limits: lim}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	code, err := sandbox.Run(ctx, spec, nil, &out, &out)
	return code, out.String(), err
}

// Every way out a hostile command might try, each refused. A script prints
// ESCAPED when its attempt worked.
func TestEscapesAreRefused(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("the escape attempts are written in Python; /usr/bin/python3 is not installed")
	}
	j := newJail(t, map[string]string{"a.txt": "a\n"})
	secretDir := traversable(t)
	secret := filepath.Join(secretDir, "id_rsa")
	os.WriteFile(secret, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"), 0o644)
	home, _ := os.UserHomeDir()
	t.Setenv("AIRLOCK_TEST_TOKEN", "s3cr3t-token-value")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	sock := filepath.Join(secretDir, "broker.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	os.Chmod(sock, 0o777)
	// py runs Python code (which must not hold a single quote) and prints
	// its error, never the code, when it fails.
	py := func(code string) string { return "python3 -c '" + code + "'" }

	tests := []struct{ name, script string }{
		{"write outside the workspace", `for p in /etc/x /usr/x /x /tmp/../etc/y /proc/sys/kernel/hostname /dev/x; do (echo x > $p) 2>/dev/null && echo ESCAPED $p; done; true`},
		{"read a planted key by absolute path", fmt.Sprintf("cat %s 2>/dev/null && echo ESCAPED; ls %s 2>/dev/null && echo ESCAPED; true", secret, secretDir)},
		{"see the server user's home", fmt.Sprintf("test -e %q && echo ESCAPED; test -e /root/.ssh && echo ESCAPED; ls /home; true", home)},
		{"read the server's environment", "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; true"},
		{"connect to a loopback port", py(fmt.Sprintf("import socket\ntry:\n socket.create_connection((\"127.0.0.1\", %d), timeout=2); print(\"ESCAPED\")\nexcept OSError as e: print(\"refused\", e)", port))},
		{"connect to the broker's socket", py(fmt.Sprintf("import socket\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect(%q); print(\"ESCAPED\")\nexcept OSError as e: print(\"refused\", e)", sock))},
		{"ptrace", py("import ctypes\nl=ctypes.CDLL(None)\nprint(\"ESCAPED\" if l.ptrace(0,0,0,0)==0 else \"refused\")")},
		{"see the server's processes", fmt.Sprintf("kill -0 %d 2>/dev/null && echo ESCAPED; ls /proc | grep -c '^[0-9]'", os.Getpid())},
		{"mount", "mount -t tmpfs none /tmp 2>/dev/null && echo ESCAPED; unshare -r true 2>/dev/null && echo ESCAPED; true"},
		{"gain capabilities", "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status | grep -v '0000000000000000$' && echo ESCAPED; true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, out, err := j.runWith(tt.script, sandbox.Limits{}, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", out)
			if strings.Contains(out, "ESCAPED") || strings.Contains(out, "s3cr3t") || strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, "hello from the host") {
				t.Errorf("escaped:\n%s", out)
			}
		})
	}
}

// No process of a run outlives it, however it tries.
func TestNoProcessOutlivesTheRun(t *testing.T) {
	j := newJail(t, nil)
	_, out, err := j.runWith("(sleep 31.4159 &) ; setsid sleep 31.4159 & nohup sleep 31.4159 >/dev/null 2>&1 & echo started", sandbox.Limits{}, 30*time.Second)
	if err != nil || !strings.Contains(out, "started") {
		t.Fatalf("%q %v", out, err)
	}
	// No wait: the run ends when its PID namespace's init has exited,
	// and the kernel lets init exit only once every other process of the
	// namespace is gone (zap_pid_ns_processes).
	if n := countProcs("31.4159"); n > 0 {
		t.Errorf("%d processes of the run are still alive", n)
	}
}

func countProcs(marker string) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			n++
		}
	}
	return n
}

// A fork bomb meets the process limit, and the run ends.
func TestForkBomb(t *testing.T) {
	j := newJail(t, nil)
	start := time.Now()
	_, _, err := j.runWith("b(){ b | b & }; b; sleep 2; echo 27.1828 > /dev/null", sandbox.Limits{Procs: 64}, 20*time.Second)
	if err != nil && !strings.Contains(err.Error(), "deadline") {
		t.Fatal(err)
	}
	if time.Since(start) > 19*time.Second {
		t.Error("the fork bomb ran until the timeout")
	}
	// No wait, as in TestNoProcessOutlivesTheRun.
	if n := countProcs("b | b"); n > 0 {
		t.Errorf("%d processes left", n)
	}
}

// A process that fills memory meets the memory limit.
func TestMemoryLimit(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("/usr/bin/python3 is not installed")
	}
	j := newJail(t, nil)
	code, out, err := j.runWith(`python3 -c "b = bytearray(4 << 30); print('ESCAPED')"`, sandbox.Limits{Memory: 1 << 30}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d: %s", code, out)
	if code == 0 || strings.Contains(out, "ESCAPED") {
		t.Errorf("4 GiB allocated under a 1 GiB limit: exit %d:\n%s", code, out)
	}
}

// nestedNS is Python that makes a user and a network namespace inside the
// run with clone(2) or clone3(2) (by number: x86_64), and in it brings the
// loopback interface up, which takes CAP_NET_ADMIN over that network
// namespace: it prints ESCAPED if it could, or how the call was refused.
const nestedNS = `import ctypes, fcntl, os, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
FLAGS = 0x10000000 | 0x40000000  # CLONE_NEWUSER | CLONE_NEWNET
def child():
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", b"lo", 0)))[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))
        os.write(1, b"ESCAPED: lo up in a nested network namespace\n")
    except OSError as e:
        os.write(1, ("nested namespace made, lo not up: %s\n" % e).encode())
    os._exit(0)
def try_clone(name, pid):
    if pid == 0:
        child()
    if pid < 0:
        print(name, "refused:", os.strerror(ctypes.get_errno()))
    else:
        os.waitpid(pid, 0)
    return pid
try_clone("clone", libc.syscall(56, FLAGS | 17, 0, 0, 0, 0))
args = ctypes.create_string_buffer(struct.pack("8Q", FLAGS, 0, 0, 0, 17, 0, 0, 0))
try_clone("clone3", libc.syscall(435, args, 64))
`

// nestedNSC is the same attack through libc's clone(3), with threads and
// processes (pthread_create and fork, which glibc makes with clone3 and
// clone without CLONE_NEW* flags) shown still working.
const nestedNSC = `#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static char stack[1 << 16];
static int child(void *arg) { (void)arg; printf("ESCAPED: in a nested user and network namespace\n"); fflush(stdout); return 0; }
static void *thread(void *arg) { (void)arg; return "thread ok"; }
int main(void) {
	int pid = clone(child, stack + sizeof stack, CLONE_NEWUSER | CLONE_NEWNET | SIGCHLD, NULL);
	if (pid < 0) printf("libc clone refused: %s\n", strerror(errno));
	else waitpid(pid, NULL, 0);
	pthread_t t; void *res;
	if (pthread_create(&t, NULL, thread, NULL) == 0 && pthread_join(t, &res) == 0) printf("%s\n", (char *)res);
	pid = fork();
	if (pid == 0) _exit(0);
	if (pid > 0 && waitpid(pid, NULL, 0) == pid) printf("fork ok\n");
	return 0;
}
`

// nestedNS386 is the attack through the i386 system call ABI, which an
// x86_64 process reaches with int 0x80: a seccomp filter that checks the
// native architecture's numbers only lets it through (unshare is 310
// there).
const nestedNS386 = `#include <stdio.h>
static long sys32(long nr, long a) {
	long ret;
	__asm__ volatile ("int $0x80" : "=a"(ret) : "a"(nr), "b"(a) : "memory");
	return ret;
}
int main(void) {
	long r = sys32(310, 0x10000000 | 0x40000000); /* unshare(CLONE_NEWUSER | CLONE_NEWNET) */
	if (r == 0) printf("ESCAPED: a nested namespace through int 0x80\n");
	else printf("int 0x80 unshare refused: %ld\n", r);
	printf("int 0x80 getpid: %ld\n", sys32(20, 0));
	return 0;
}
`

// A run cannot make a nested user namespace, where it would hold every
// capability (CAP_NET_ADMIN over a network namespace of its own: the
// kernel's netfilter and netlink surface): clone with any CLONE_NEW* flag
// is refused, clone3 answers ENOSYS (so that libc falls back to clone,
// whose flags the filter reads), unshare is refused; threads, fork and
// processes still work.
func TestNoNestedNamespaces(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("the attack is written in Python; /usr/bin/python3 is not installed")
	}
	files := map[string]string{"nested.py": nestedNS, "nested.c": nestedNSC, "nested386.c": nestedNS386}
	j := newJail(t, files)
	tests := []struct {
		name, script string
		want         []string
	}{
		{"raw clone and clone3", "python3 nested.py", []string{"clone refused: Operation not permitted", "clone3 refused: Function not implemented"}},
		{"unshare(1)", "unshare -Urn true 2>&1 && echo ESCAPED; unshare -U true 2>&1 && echo ESCAPED; true", []string{"unshare failed: Operation not permitted"}},
		{"threads and processes", "python3 -c 'import threading, subprocess; t = threading.Thread(target=print, args=(\"thread ok\",)); t.start(); t.join(); subprocess.run([\"echo\", \"subprocess ok\"])'",
			[]string{"thread ok", "subprocess ok"}},
	}
	if _, err := exec.LookPath("cc"); err == nil {
		tests = append(tests, struct {
			name, script string
			want         []string
		}{"libc clone from C", "cc -o /tmp/nested nested.c -lpthread && /tmp/nested", []string{"libc clone refused: Operation not permitted", "thread ok", "fork ok"}})
		if runtime.GOARCH == "amd64" {
			// -38: ENOSYS, for every call of the foreign ABI.
			tests = append(tests, struct {
				name, script string
				want         []string
			}{"unshare through the i386 ABI (int 0x80)", "cc -o /tmp/nested386 nested386.c && /tmp/nested386",
				[]string{"int 0x80 unshare refused: -38", "int 0x80 getpid: -38"}})
		}
	} else {
		t.Log("no C compiler (cc): the attack from C is not tried")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, out, err := j.runWith(tt.script, sandbox.Limits{}, 60*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", out)
			if strings.Contains(out, "ESCAPED") || strings.Contains(out, "nested namespace made") {
				t.Errorf("a nested namespace was made:\n%s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in:\n%s", w, out)
				}
			}
		})
	}
}
