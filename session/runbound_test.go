package session_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session"
)

// A run holds no more than the session's quota anywhere it may write:
// /tmp, its home, /dev/shm and the session's own ~/.cache are bounded as
// the workspace is, a worker's ~/.cache by the operator's cache size, and
// nothing a refused run wrote there is left for the next run.
func TestRunStorageIsBoundedEverywhere(t *testing.T) {
	const quota = 8 << 20
	for _, c := range []struct {
		name, dir   string
		workerCache bool
	}{
		{"tmp", "/tmp", false},
		{"home", "$HOME", false},
		{"own cache", "$HOME/.cache", false},
		{"worker cache", "$HOME/.cache", true},
		{"shm", "/dev/shm", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := repo(t, true, map[string]string{"README.md": "# p\n"})
			opts := session.RunOptions{}
			limits := memfs.Limits{MaxTotalBytes: quota, MaxFileBytes: 4 << 20}
			if c.workerCache {
				opts.Cache = workerCache(t, filepath.Join(t.TempDir(), "cache"), "file:/w.md", quota)
				limits = memfs.Limits{} // the cache's bound is the operator's, not the workspace's
			}
			e := runEnv(t, r, opts, config{limits: limits})
			// 64 MiB in 1 MiB files, each under the per-file limit.
			res, err := e.s.Run(context.Background(), session.RunArgs{Command: fmt.Sprintf(
				`mkdir -p %[1]s/fill && i=0; while [ $i -lt 64 ]; do head -c 1048576 /dev/zero > %[1]s/fill/$i || break; i=$((i+1)); done; echo wrote=$i`, c.dir)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Killed == "" && strings.Contains(res.Stdout, "wrote=64") {
				t.Errorf("64 MiB went into %s under an 8 MiB bound: %+v", c.dir, res)
			}
			next, err := e.s.Run(context.Background(), session.RunArgs{Command: fmt.Sprintf(`du -sk %s/fill 2>/dev/null || echo none`, c.dir)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(next.Stdout, "none") {
				t.Errorf("the next run still sees what was refused in %s: %q", c.dir, next.Stdout)
			}
			if c.workerCache {
				if res.CacheDropped == "" {
					t.Error("the run's answer does not say its cache writes were dropped")
				}
				if n := dirSize(opts.Cache.Dir()); n > quota {
					t.Errorf("the worker's cache holds %d bytes, over its bound of %d", n, quota)
				}
			}
		})
	}
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Empty files cost no bytes, and are counted as the quota counts files: a
// run making 200,000 of them (twice the limit) is stopped within seconds
// of passing the limit, none of them comes in, and the session answers the
// next call. (The run prints when it nears the limit, or was refused: how
// long making 100,000 files takes is the machine's, not airlock's.)
func TestRunManyEmptyFilesIsStopped(t *testing.T) {
	for _, dir := range []string{".", "/tmp"} {
		t.Run(strings.Trim(dir, "/"), func(t *testing.T) {
			r := repo(t, true, map[string]string{"README.md": "# p\n"})
			// The mirror where airlock keeps it: on a tmpfs.
			e := runEnv(t, r, session.RunOptions{MirrorDir: shmDir(t)}, config{limits: memfs.Limits{MaxFiles: 100_000}})
			t0 := time.Now()
			res, err := e.s.Run(context.Background(), session.RunArgs{Command: fmt.Sprintf(
				`cd %s && mkdir -p many && cd many && python3 -c '
import sys, time
try:
    for i in range(200000):
        open("f%%d" %% i, "w").close()
        if i == 99000:
            print("passed=%%f" %% time.time(), flush=True)
except OSError as e:
    print("passed=%%f refused: %%s" %% (time.time(), e), flush=True)
    sys.exit(1)
print("made all")'`, dir)}, nil)
			answered := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("answered in %s (ran %s; killed: %q, refused %v, created %d): %s", answered.Sub(t0), res.Duration, res.Killed, res.Refused, len(res.Created), res.Stdout)
			if strings.Contains(res.Stdout, "made all") {
				t.Fatalf("200,000 files were made under a 100,000-file quota")
			}
			var passed float64
			if _, err := fmt.Sscanf(res.Stdout, "passed=%f", &passed); err != nil {
				t.Fatalf("the run did not say when it neared the limit: %q", res.Stdout)
			}
			near := time.Unix(0, int64(passed*1e9))
			d := answered.Sub(near)
			// Stopping and dropping 100,000 files costs about what making
			// them did: on a machine busy enough that making them took
			// long, the bound grows with it (CI at load 12: 5.3 s to make
			// them, 7.1 s to stop). A run left going would take as long
			// again to reach its 200,000.
			if bound := max(5*time.Second, near.Sub(t0)*3/2); d > bound {
				t.Errorf("the run answered %s after nearing the limit (%s after it started): over %s", d, near.Sub(t0), bound)
			}
			t.Logf("answered %s after nearing the limit", d)
			if len(res.Created) > 0 {
				t.Errorf("%d files came into the workspace", len(res.Created))
			}
			t1 := time.Now()
			if _, err := e.s.Workspace().ReadFile("README.md"); err != nil {
				t.Fatal(err)
			}
			next, err := e.s.Run(context.Background(), session.RunArgs{Command: "ls many /tmp/many 2>/dev/null | wc -l"}, nil)
			if err != nil || next.Stdout != "0\n" {
				t.Fatalf("the next run: %q %v", next.Stdout, err)
			}
			if d := time.Since(t1); d > 5*time.Second {
				t.Errorf("the next calls took %s", d)
			}
		})
	}
}

// What a run does in ~/.cache reaches the cache after it: files written
// over, directories removed (and made again, opaque), symlinks; times
// kept.
func TestRunCacheMergesChanges(t *testing.T) {
	for _, worker := range []bool{false, true} {
		t.Run(fmt.Sprint("worker=", worker), func(t *testing.T) {
			r := repo(t, true, map[string]string{"README.md": "# p\n"})
			opts := session.RunOptions{}
			if worker {
				opts.Cache = workerCache(t, filepath.Join(t.TempDir(), "cache"), "file:/w.md", 1<<30)
			}
			e := runEnv(t, r, opts, config{})
			mustRun(t, e, "mkdir -p ~/.cache/a/deep ~/.cache/d && echo x > ~/.cache/a/deep/x && echo y > ~/.cache/y && echo old > ~/.cache/d/old && touch -d '2001-02-03 04:05:06' ~/.cache/y")
			res := mustRun(t, e, "rm -r ~/.cache/a && echo z > ~/.cache/y2 && ln -s y ~/.cache/link && rm -r ~/.cache/d && mkdir ~/.cache/d && echo new > ~/.cache/d/new && mkdir -p ~/.cache/a && echo again > ~/.cache/a/again")
			if res.Exit != 0 || res.CacheDropped != "" {
				t.Fatalf("the second run: %+v", res)
			}
			third := mustRun(t, e, "cd ~/.cache && find . | sort && cat link d/new a/again && stat -c %y y")
			got := third.Stdout
			want := ".\n./a\n./a/again\n./d\n./d/new\n./link\n./y\n./y2\ny\nnew\nagain\n2001-02-03 04:05:06.000000000"
			if !strings.HasPrefix(got, want) {
				t.Errorf("the cache after two runs:\n%s\nwant\n%s\n(stderr %q)", got, want, third.Stderr)
			}
		})
	}
}

// Go's module cache (and pip's, and others) make what they extract
// read-only: directories 0555, files 0444. A run's writes there are kept
// whole, and a later run adds beside them, as on the host.
func TestRunCacheKeepsReadOnlyTrees(t *testing.T) {
	for _, worker := range []bool{false, true} {
		t.Run(fmt.Sprint("worker=", worker), func(t *testing.T) {
			r := repo(t, true, map[string]string{"README.md": "# p\n"})
			opts := session.RunOptions{}
			if worker {
				opts.Cache = workerCache(t, filepath.Join(t.TempDir(), "cache"), "file:/w.md", 1<<30)
			}
			e := runEnv(t, r, opts, config{})
			first := mustRun(t, e, "mkdir -p ~/.cache/mod/m@v1/sub && echo a > ~/.cache/mod/m@v1/a.go && echo b > ~/.cache/mod/m@v1/sub/b.go && chmod -R a-w ~/.cache/mod/m@v1")
			if first.Exit != 0 || first.CacheDropped != "" {
				t.Fatalf("the first run: %+v", first)
			}
			second := mustRun(t, e, "mkdir -p ~/.cache/mod/m@v2 && echo c > ~/.cache/mod/m@v2/c.go && chmod -R a-w ~/.cache/mod/m@v2 && cat ~/.cache/mod/m@v1/a.go ~/.cache/mod/m@v1/sub/b.go")
			if second.Exit != 0 || second.CacheDropped != "" || second.Stdout != "a\nb\n" {
				t.Fatalf("the second run: %+v", second)
			}
			third := mustRun(t, e, "cd ~/.cache/mod && find . -type f | sort && stat -c %a m@v1 m@v1/sub m@v1/a.go m@v2")
			want := "./m@v1/a.go\n./m@v1/sub/b.go\n./m@v2/c.go\n555\n555\n444\n555\n"
			if third.Stdout != want {
				t.Errorf("the cache after the runs:\n%s\nwant\n%s\n(stderr %q)", third.Stdout, want, third.Stderr)
			}
		})
	}
}

// shmDir is a new directory on /dev/shm, where airlock's mirrors are by
// default, or in the test's temporary directory without one.
func shmDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "airlock-test-")
	if err != nil {
		dir = t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o711)
	return filepath.Join(dir, "mirrors")
}

// A run's processes share one budget: a fork bomb gets no more than the
// run's process count, all of them together, and the session goes on.
func TestRunProcessesAreBoundedTogether(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := runEnv(t, r, session.RunOptions{Limits: sandbox.Limits{Procs: 100}}, config{})
	res, err := e.s.Run(context.Background(), session.RunArgs{Command: `python3 -c '
import os, time
n = 0
try:
    for i in range(500):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print("refused: %s" % e)
print("started=%d" % n, flush=True)
os.killpg(0, 9)'`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var started int
	if i := strings.Index(res.Stdout, "started="); i < 0 {
		t.Fatalf("the run did not say how many it started: %q %q", res.Stdout, res.Stderr)
	} else {
		fmt.Sscanf(res.Stdout[i:], "started=%d", &started)
	}
	if started >= 100 {
		t.Errorf("a run of a 100-process budget started %d processes", started)
	}
	if next := mustRun(t, e, "echo alive"); next.Stdout != "alive\n" {
		t.Errorf("the next run: %+v", next)
	}
}

// A run's processes share one memory budget: eight processes of 64 MiB
// each, every one far under the budget alone, are ended together over it.
func TestRunMemoryIsBoundedTogether(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := runEnv(t, r, session.RunOptions{Limits: sandbox.Limits{Memory: 256 << 20}}, config{})
	res, err := e.s.Run(context.Background(), session.RunArgs{Command: `python3 -c '
import os, time
for i in range(8):
    if os.fork() == 0:
        b = bytearray(64 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        time.sleep(20)
        os._exit(0)
for i in range(8):
    os.wait()
print("all done")'`, Timeout: 60 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout, "all done") || res.Killed == "" {
		t.Errorf("512 MiB in 8 processes under a 256 MiB budget: %+v", res)
	}
	if res.Duration > 15*time.Second {
		t.Errorf("ended after %s", res.Duration)
	}
	if next := mustRun(t, e, "echo alive"); next.Stdout != "alive\n" {
		t.Errorf("the next run: %+v", next)
	}
	t.Logf("killed after %s: %s", res.Duration, res.Killed)
}

// Shared memory is in the run's budget too: memfds (written, never
// mapped), SysV segments (attached, filled and detached, so no process
// maps them) and MAP_SHARED anonymous mappings of several processes each
// took 512 MiB under a 256 MiB budget, since the watch counted private
// resident memory only. Each is ended, or (SysV, bounded by its IPC
// namespace) refused past the budget.
func TestRunSharedMemoryIsBounded(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("the attacks are written in Python")
	}
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := runEnv(t, r, session.RunOptions{Limits: sandbox.Limits{Memory: 256 << 20}}, config{})
	for _, tc := range []struct{ name, script string }{
		{"memfd", `
import os
held = 0
fds = []
for i in range(8):
    fd = os.memfd_create("m%d" % i)
    for j in range(64):
        os.write(fd, b"x" * (1 << 20))
    fds.append(fd)
    held += 64
print("held=%d" % held, flush=True)`},
		{"SysV", `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
held = 0
for i in range(8):
    id = libc.shmget(0, 64 << 20, 0o1600)
    if id < 0:
        print("shmget:", os.strerror(ctypes.get_errno()))
        break
    a = libc.shmat(id, None, 0)
    ctypes.memset(ctypes.c_void_p(a), 1, 64 << 20)
    libc.shmdt(ctypes.c_void_p(a))
    held += 64
print("held=%d" % held, flush=True)`},
		{"shared mappings", `
import mmap, os, time
for i in range(8):
    if os.fork() == 0:
        m = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_SHARED)
        for j in range(0, 64 << 20, 4096):
            m[j] = 1
        time.sleep(20)
        os._exit(0)
time.sleep(3)
print("held=512", flush=True)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.s.Run(context.Background(), session.RunArgs{Command: "python3 -c '" + tc.script + `
import time
time.sleep(3)
print("all done")'`, Timeout: 60 * time.Second}, nil)
			if err != nil {
				t.Fatal(err)
			}
			held := -1
			if i := strings.Index(res.Stdout, "held="); i >= 0 {
				fmt.Sscanf(res.Stdout[i:], "held=%d", &held)
			}
			if res.Killed == "" && (held < 0 || held > 256) {
				t.Errorf("%d MiB of shared memory under a 256 MiB budget, not ended: %+v", held, res)
			}
			t.Logf("held %d MiB; killed: %q; %q", held, res.Killed, res.Stdout)
			if next := mustRun(t, e, "echo alive"); next.Stdout != "alive\n" {
				t.Errorf("the next run: %+v", next)
			}
		})
	}
}

// Sparse files cost the quota watch nothing (it counts blocks), but each
// would be read at its full size: 300 sparse files of 9 MB under a 512
// MiB quota held 2.6 GB in the server. They are refused as over the quota
// without being read, and nothing of the run comes in.
func TestRunSparseFilesAreNotReadPastTheQuota(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := runEnv(t, r, session.RunOptions{}, config{limits: memfs.Limits{MaxTotalBytes: 64 << 20}})
	res, err := e.s.Run(context.Background(), session.RunArgs{Command: `for i in $(seq 1 40); do truncate -s 9000000 f$i; done; echo made`, Timeout: 60 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Killed == "" || len(res.Created) != 0 {
		t.Errorf("360 MB of sparse files under a 64 MiB quota: killed %q, %d files came in", res.Killed, len(res.Created))
	}
	if next := mustRun(t, e, "ls f1 2>&1; echo alive"); !strings.Contains(next.Stdout, "alive") || strings.Contains(next.Stdout, "f1\n") {
		t.Errorf("the next run: %+v", next)
	}
}

// What a run leaves in the cache cannot turn a later merge against the
// cache or the host: a symlink where a file or directory comes later, or
// at the name the merge writes through, is replaced, never followed.
func TestRunCacheMergeFollowsNoLink(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	outside := t.TempDir()
	e := runEnv(t, r, session.RunOptions{}, config{})
	mustRun(t, e, fmt.Sprintf("cd ~/.cache && ln -s %[1]s d && ln -s %[1]s/f f && ln -s %[1]s/g g.airlock-merge", outside))
	res := mustRun(t, e, "cd ~/.cache && rm d f && mkdir d && echo in > d/x && echo in > f && echo in > g")
	if res.Exit != 0 || res.CacheDropped != "" {
		t.Fatalf("the second run: %+v", res)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the merge wrote outside the cache: %v", ents)
	}
	if got := mustRun(t, e, "cd ~/.cache && cat d/x f g && ls -l | grep -c '^l'").Stdout; got != "in\nin\nin\n0\n" {
		t.Errorf("the cache after the merge: %q", got)
	}
}
