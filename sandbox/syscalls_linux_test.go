package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/sandbox"
)

// syscallCase is one system call on one ABI, and how the jail must answer
// it: "errno N", "allowed" or "killed by SIGSYS" (testdata/sysprobe's words).
type syscallCase struct {
	label, abi string
	nr         int
	arg0       uint64
	want       string
}

// abis are the system call ABIs an x86_64 process reaches: its own, x32's
// (the syscall instruction, numbers with __X32_SYSCALL_BIT) and i386's
// (int 0x80).
var abis = []struct {
	name   string
	info   *arch.Info
	native bool
}{{"x86_64", arch.X86_64, true}, {"x32", arch.X32, false}, {"i386", arch.I386, false}}

// answer is how the kernel answers a call that seccomp action a decides.
func answer(t *testing.T, a seccomp.Action) string {
	t.Helper()
	switch a &^ 0xffff {
	case seccomp.ActionErrno:
		errno := a & 0xffff
		if errno == 0 { // go-seccomp-bpf's default errno
			errno = seccomp.Action(unix.EPERM)
		}
		return fmt.Sprintf("errno %d", errno)
	case seccomp.ActionKillProcess:
		// (Not kill_thread nor trap: in a Go process the first leaves the
		// others running and the runtime turns the second into a crash.)
		return "killed by SIGSYS"
	case seccomp.ActionAllow, seccomp.ActionLog:
		return "allowed"
	}
	t.Fatalf("the policy uses action %#x, which this test does not know how to check: teach answer", uint32(a))
	return ""
}

// arg0For is a first argument that meets conds (a condition on another
// argument would need the probe to pass it).
func arg0For(t *testing.T, name string, conds seccomp.ArgumentConditions) uint64 {
	var v uint64
	for _, c := range conds {
		switch {
		case c.Argument != 0:
			t.Fatalf("%s: the policy tests argument %d; testdata/sysprobe passes only the first (and its cookie in the sixth)", name, c.Argument)
		case c.Operation == seccomp.BitsSet || c.Operation == seccomp.Equal:
			v |= c.Value
		default:
			t.Fatalf("%s: the policy tests its first argument with %s: teach arg0For", name, c.Operation)
		}
	}
	return v
}

// syscallCases generates a case per refused call per ABI from the policy's
// own table, with controls the policy allows.
func syscallCases(t *testing.T) []syscallCase {
	p := sandbox.SeccompPolicy()
	type call struct {
		name string
		arg0 uint64
		want string
	}
	enosys := fmt.Sprintf("errno %d", unix.ENOSYS)
	calls := []call{
		// Controls, which the policy lets through natively: the probe
		// must see them as allowed, or it could not tell a missing refusal.
		{"getpid", 0, "allowed"},
		{"clone", 0, "allowed"}, // no CLONE_NEW* flag: threads and fork
		// What the policy must hold whatever its table says: io_uring
		// absent, as on a kernel without it (issue 32).
		{"io_uring_setup", 0, enosys},
		{"io_uring_enter", 0, enosys},
		{"io_uring_register", 0, enosys},
	}
	if answer(t, p.DefaultAction) != "allowed" {
		t.Fatalf("the policy's default is %s, not allow: its controls need rethinking", answer(t, p.DefaultAction))
	}
	for _, g := range p.Syscalls {
		for _, n := range g.Names {
			calls = append(calls, call{n, 0, answer(t, g.Action)})
		}
		for _, n := range g.NamesWithCondtions {
			calls = append(calls, call{n.Name, arg0For(t, n.Name, n.Conditions), answer(t, g.Action)})
		}
	}
	seen := map[string]string{}
	var cases []syscallCase
	for _, c := range calls {
		key := fmt.Sprintf("%s,%#x", c.name, c.arg0)
		if w, ok := seen[key]; ok {
			if w != c.want {
				t.Errorf("%s: the policy's table answers %s, this test wants %s", key, c.want, w)
			}
			continue
		}
		seen[key] = c.want
		for _, abi := range abis {
			nr, ok := abi.info.SyscallNames[c.name]
			if !ok {
				t.Logf("%s has no %s: not tried there", abi.name, c.name)
				continue
			}
			want := c.want
			if !abi.native {
				want = fmt.Sprintf("errno %d", sandbox.ForeignABIErrno)
			}
			label := c.name + "/" + abi.name
			if c.arg0 != 0 {
				label = fmt.Sprintf("%s,%#x/%s", c.name, c.arg0, abi.name)
			}
			cases = append(cases, syscallCase{label, abi.name, nr, c.arg0, want})
		}
	}
	return cases
}

// buildProbe builds testdata/sysprobe, a static binary.
func buildProbe(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "sysprobe")
	// go test puts its own GOROOT/bin first on the PATH (Go 1.19 and later).
	cmd := exec.Command("go", "build", "-o", out, "./testdata/sysprobe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/sysprobe: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostRunsI386 says whether this kernel takes i386 calls from an x86_64
// process at all: without IA32 emulation (ia32_emulation=0) int 0x80
// faults before seccomp sees it, and no i386 call can be made, refused or
// not. The probe asks outside the jail, with getpid, which its own filter
// answers without running.
func hostRunsI386(t *testing.T, probe []byte) bool {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sysprobe")
	if err := os.WriteFile(bin, probe, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "getpid=i386:20:0").CombinedOutput()
	switch got := strings.TrimSpace(string(out)); {
	case err == nil && got == "getpid allowed":
		return true
	case strings.Contains(got, "killed by SIGSEGV"):
		t.Logf("this kernel takes no i386 system calls (int 0x80 faults): the i386 ABI is not tried")
		return false
	default:
		t.Fatalf("the probe outside the jail: %v %q", err, got)
		return false
	}
}

// Every system call the policy refuses is refused as the policy says, on
// each of the three ABIs an x86_64 process reaches, made by a process
// inside a real jail: the cases come from the policy's table, so a call
// added to it is tried here. One jail runs them all; testdata/sysprobe
// makes each call in a process of its own and tells the jail's answer
// from the kernel's (see its doc), never letting a call run.
func TestEveryRefusalOnEveryABI(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the probe makes x86_64, x32 and i386 calls; this is " + runtime.GOARCH)
	}
	probe := buildProbe(t)
	cases := syscallCases(t)
	if !hostRunsI386(t, probe) {
		kept := cases[:0]
		for _, c := range cases {
			if c.abi != "i386" {
				kept = append(kept, c)
			}
		}
		cases = kept
	}
	j := newJail(t, map[string]string{"sysprobe": string(probe)})
	args := make([]string, len(cases))
	for i, c := range cases {
		args[i] = fmt.Sprintf("'%s=%s:%d:%d'", c.label, c.abi, c.nr, c.arg0)
	}
	start := time.Now()
	code, out, err := j.runWith("chmod +x sysprobe && ./sysprobe "+strings.Join(args, " "), sandbox.Limits{}, 60*time.Second)
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	t.Logf("%d calls in one jail in %s", len(cases), time.Since(start).Round(time.Millisecond))
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if label, answer, ok := strings.Cut(line, " "); ok {
			got[label] = answer
		}
	}
	defer func() {
		if t.Failed() {
			t.Logf("the probe's answers:\n%s", out)
		}
	}()
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			if got[c.label] != c.want {
				t.Errorf("%s (number %d) answered %q, the policy says %q", c.label, c.nr, got[c.label], c.want)
			}
		})
	}
}
