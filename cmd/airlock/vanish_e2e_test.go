//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStateGoneUnderServe: the session's directory,
// then the whole state directory, removed under a running airlock serve;
// 13 write_file calls after it. Every call answered ok is there after a
// SIGKILL and a restart (the server wrote its state again), and the
// restart resumed the session rather than starting an empty one.
func TestStateGoneUnderServe(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	for _, what := range []string{"session", "state"} {
		t.Run(what, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			root, env, workerFile := bareWorker(t)
			d := startDurable(t, ctx, bin, env, root, "--worker", workerFile)
			d.w.call("write_file", map[string]any{"path": "first.txt", "content": "first\n"})
			state := filepath.Join(root, "state", "airlock")
			dirs, _ := filepath.Glob(filepath.Join(state, "sessions", "*", "journal"))
			if len(dirs) != 1 {
				t.Fatalf("session directories: %v", dirs)
			}
			gone := filepath.Dir(dirs[0])
			if what == "state" {
				gone = state
			}
			if err := os.RemoveAll(gone); err != nil {
				t.Fatal(err)
			}
			want := []string{"first.txt=first\n"}
			for i := range 13 {
				p := fmt.Sprintf("f%02d.txt", i)
				out, isErr := d.w.try("write_file", map[string]any{"path": p, "content": p + "\n"})
				if !isErr {
					want = append(want, p+"="+p+"\n")
				} else if !strings.Contains(out, "state") {
					t.Fatalf("write_file %s refused without saying why: %s", p, out)
				}
			}
			if len(want) == 1 {
				t.Fatalf("every write after the removal was refused:\n%s", d.stderr.String())
			}
			sort.Strings(want)
			d.cmd.Process.Kill()
			d.wait(t)

			again := startDurable(t, ctx, bin, env, root, "--worker", workerFile)
			if inst := again.cs.InitializeResult().Instructions; !strings.Contains(inst, "was resumed") {
				t.Fatalf("the restart did not resume the session: %q\n%s", inst, again.stderr.String())
			}
			files, _, _ := observe(t, again.w)
			if fmt.Sprint(files) != fmt.Sprint(want) {
				t.Fatalf("after the restart:\n%q\nanswered ok:\n%q", files, want)
			}
		})
	}
}

// TestFullDiskStillAnswersReads: the server can no longer write its state
// (a file size limit set on the running process stands for a full disk):
// a write says that its save failed, and read_file, list_files, git_status
// and git_diff still answer with their content.
func TestFullDiskStillAnswersReads(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root, env, workerFile := bareWorker(t)
	d := startDurable(t, ctx, bin, env, root, "--worker", workerFile)
	d.w.call("write_file", map[string]any{"path": "kept.txt", "content": "kept\n"})
	journals, _ := filepath.Glob(filepath.Join(root, "state", "airlock", "sessions", "*", "journal"))
	if len(journals) != 1 {
		t.Fatalf("journals: %v", journals)
	}
	fi, err := os.Stat(journals[0])
	if err != nil {
		t.Fatal(err)
	}
	full := unix.Rlimit{Cur: uint64(fi.Size()), Max: uint64(fi.Size())}
	if err := unix.Prlimit(d.cmd.Process.Pid, unix.RLIMIT_FSIZE, &full, nil); err != nil {
		t.Skipf("cannot limit the server's file size: %v", err)
	}
	out := d.w.refused("write_file", map[string]any{"path": "big.txt", "content": strings.Repeat("x", 100_000)})
	if !strings.Contains(out, "saving the session") {
		t.Fatalf("the failed save is not said: %s", out)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_file", map[string]any{"path": "kept.txt"}, "kept\n"},
		{"read_file", map[string]any{"path": "big.txt"}, strings.Repeat("x", 100_000)},
		{"list_files", map[string]any{"path": "."}, "kept.txt"},
		{"git_status", nil, "big.txt"},
		{"git_diff", map[string]any{"path": "kept.txt"}, "+kept"},
	} {
		out, isErr := d.w.try(c.tool, c.args)
		if isErr || !strings.Contains(out, c.want) {
			t.Errorf("%s with the disk full: error %v, %.300q", c.tool, isErr, out)
		}
	}
}
