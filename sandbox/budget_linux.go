package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A run's processes share one memory and process budget (Limits.Memory,
// Limits.Procs):
//
//   - with a cgroup v2 delegated to this user (the parent of this
//     process's cgroup gives its children the memory and pids controllers
//     and this user may make cgroups there), each helper starts in a
//     cgroup of its own (clone3's CLONE_INTO_CGROUP), with memory.max and
//     pids.max: the kernel holds the budget, and an OOM kill there ends
//     the run;
//   - otherwise the process count is the run's own already (RLIMIT_NPROC
//     is counted per user namespace, and each run has its own), each
//     process's address space is bounded (RLIMIT_AS), and a watch sums
//     the resident private memory of the run's processes (those in its PID
//     namespace, shared memory and memfds included: nsMemory) every 100
//     ms and ends the run over the budget; SysV shared memory is bounded
//     by the run's IPC namespace (shmall, shmmax) at the budget.

// budget is how runs are bounded here, found once.
var budget struct {
	once   sync.Once
	parent string // the cgroup directory runs' cgroups go in; "" without
	why    string // why not, when not
	seq    atomic.Int64
}

// Budget says how the processes of a run under l are bounded together on
// this machine, in a line for the operator.
func Budget(l Limits) string {
	findCgroup()
	l = l.withDefaults()
	if budget.parent != "" {
		return fmt.Sprintf("a run's processes share one cgroup v2 under %s: memory.max %d MiB, pids.max %d", budget.parent, l.Memory>>20, l.Procs)
	}
	return fmt.Sprintf("no cgroup v2 here (%s): a run's processes are bounded together by their count (%d, in the run's own user namespace) "+
		"and by a watch on their summed memory (%d MiB, every 100 ms), and each by its address space", budget.why, l.Procs, l.Memory>>20)
}

func findCgroup() {
	budget.once.Do(func() {
		p, err := cgroupParent()
		if err != nil {
			budget.why = err.Error()
			return
		}
		budget.parent = p
	})
}

// cgroupParent finds where this user may make a cgroup for each run with
// the memory and pids controllers, and tries it once.
func cgroupParent() (string, error) {
	mnt := ""
	for _, m := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(m, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			mnt = m
			break
		}
	}
	if mnt == "" {
		return "", errors.New("no cgroup v2 file system mounted")
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	own := ""
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			own = p
		}
	}
	if own == "" {
		return "", errors.New("this process has no cgroup v2")
	}
	parent := filepath.Join(mnt, filepath.Dir(own))
	if own == "/" {
		parent = mnt
	}
	ctl, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	have := strings.Fields(string(ctl))
	for _, c := range []string{"memory", "pids"} {
		if !slices.Contains(have, c) {
			return "", fmt.Errorf("%s does not delegate the %s controller (cgroup.subtree_control: %q)", parent, c, strings.TrimSpace(string(ctl)))
		}
	}
	probe := filepath.Join(parent, fmt.Sprintf("airlock-%d-probe", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return "", fmt.Errorf("cannot make a cgroup in %s: %v", parent, err)
	}
	// An empty cgroup left behind holds nothing; the next start tries again.
	defer func() { _ = os.Remove(probe) }()
	for _, f := range []string{"memory.max", "pids.max"} {
		if err := os.WriteFile(filepath.Join(probe, f), []byte("max"), 0o644); err != nil {
			return "", fmt.Errorf("cannot set %s in %s: %v", f, parent, err)
		}
	}
	return parent, nil
}

// runCgroup is one helper's cgroup, open for CLONE_INTO_CGROUP.
type runCgroup struct {
	dir string
	fd  *os.File
}

// newRunCgroup makes a cgroup for a helper about to start, or nil where
// there is none.
func newRunCgroup() *runCgroup {
	findCgroup()
	if budget.parent == "" {
		return nil
	}
	dir := filepath.Join(budget.parent, fmt.Sprintf("airlock-%d-run-%d", os.Getpid(), budget.seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir) // empty: it holds nothing if left
		return nil
	}
	return &runCgroup{dir: dir, fd: fd}
}

// limit sets the run's budget on its cgroup.
func (c *runCgroup) limit(l Limits) error {
	for f, v := range map[string]int64{"memory.max": l.Memory, "pids.max": int64(l.Procs)} {
		if err := os.WriteFile(filepath.Join(c.dir, f), []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
			return fmt.Errorf("%w: setting the run's %s: %v", ErrSetup, f, err)
		}
	}
	// Without swap accounting there is no such file, and nothing to bound.
	_ = os.WriteFile(filepath.Join(c.dir, "memory.swap.max"), []byte("0"), 0o644)
	return nil
}

// oomKilled reports whether the kernel killed a process of the run for
// its memory budget.
func (c *runCgroup) oomKilled() bool {
	b, _ := os.ReadFile(filepath.Join(c.dir, "memory.events"))
	for _, l := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(l, "oom_kill "); ok {
			return n != "0"
		}
	}
	return false
}

// remove removes the cgroup once its processes are gone (the PID
// namespace's last ones may take a moment to be reaped).
func (c *runCgroup) remove() {
	c.fd.Close()
	for i := 0; i < 50; i++ {
		if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watchMemory ends the run whose PID namespace's init is pid when its
// processes' memory (nsMemory), summed, passes limit; it returns
// when ctx ends, and says whether it ended the run.
func watchMemory(ctx context.Context, pid int, limit int64, kill func()) bool {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return false
	}
	page := int64(os.Getpagesize())
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		if nsMemory(ns, page) > limit {
			kill()
			return true
		}
	}
}

// nsMemory sums the memory the processes in PID namespace ns hold
// that no file on a bounded file system holds for them: their anonymous
// memory and their shared memory (a MAP_SHARED|MAP_ANONYMOUS mapping,
// SysV segments attached, a mapped memfd), each process counted for its
// proportional share (smaps_rollup's Pss_Anon and Pss_Shmem: pages several
// processes share are counted once in all); and the memfds they hold
// open, each once. Shared memory is not in statm's private resident
// count, so a run held any amount of it under any budget: 512 MiB in
// memfds, in SysV segments or in shared mappings of eight processes under
// a 256 MiB budget. Without smaps_rollup (Linux before 4.14) statm's
// resident count is taken whole.
func nsMemory(ns string, page int64) int64 {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var sum int64
	memfds := map[[2]uint64]bool{}
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		if l, err := os.Readlink("/proc/" + n + "/ns/pid"); err != nil || l != ns {
			continue
		}
		sum += procMemory("/proc/"+n, page)
		sum += procMemfds("/proc/"+n, memfds)
	}
	return sum
}

// procMemory is what process dir holds in anonymous and shared memory,
// its proportional share.
func procMemory(dir string, page int64) int64 {
	if b, err := os.ReadFile(dir + "/smaps_rollup"); err == nil {
		var kb int64
		found := false
		for _, l := range bytes.Split(b, []byte("\n")) {
			for _, key := range []string{"Pss_Anon:", "Pss_Shmem:"} {
				if v, ok := bytes.CutPrefix(l, []byte(key)); ok {
					f := bytes.Fields(v)
					if len(f) > 0 {
						n, _ := strconv.ParseInt(string(f[0]), 10, 64)
						kb += n
						found = true
					}
				}
			}
		}
		if found {
			return kb << 10
		}
	}
	b, err := os.ReadFile(dir + "/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	res, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return res * page
}

// procMemfds is what the memfds process dir holds open take in memory,
// those in seen (by device and inode) left out and added to it.
func procMemfds(dir string, seen map[[2]uint64]bool) int64 {
	fd, err := os.Open(dir + "/fd")
	if err != nil {
		return 0
	}
	defer fd.Close()
	names, _ := fd.Readdirnames(-1)
	var sum int64
	for _, n := range names {
		if l, err := os.Readlink(dir + "/fd/" + n); err != nil || !strings.HasPrefix(l, "/memfd:") {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(dir+"/fd/"+n, &st) != nil {
			continue
		}
		key := [2]uint64{uint64(st.Dev), st.Ino}
		if seen[key] {
			continue
		}
		seen[key] = true
		sum += st.Blocks * 512
	}
	return sum
}

// waitKilled is watchMemory's answer, once it was told to stop.
func waitKilled(c <-chan bool) bool { return <-c }
