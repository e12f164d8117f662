package targets_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/targets"
)

// TestPushSurvivesSIGKILL kills a pushing process at random moments, 50
// times for each kind of local target: afterwards (once the target is
// opened again, which recovers an interrupted push) the branch is at the
// old or the new commit, never anything else; git fsck --strict is clean;
// and a working tree holds exactly the files of the commit its branch is
// at, with nothing left over.
func TestPushSurvivesSIGKILL(t *testing.T) {
	t.Parallel() // long and independent: alongside the others, the package stays well within Go's default timeout
	if os.Getenv("AIRLOCK_KILL_CHILD") != "" {
		t.Skip("child")
	}
	// A few kills by default keep the README's test command within Go's
	// default timeout on two cores; CI sets AIRLOCK_LONG_TESTS for the
	// full run of fifty of each kind.
	runs := runsOf(6, 50, 3)
	for _, kind := range []string{"bare", "worktree"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			template := t.TempDir()
			if kind == "bare" {
				run(t, template, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
			} else {
				run(t, template, nil, nil, "init", "-q", "-b", "main", ".")
			}
			files := map[string]string{}
			for i := 0; i < 300; i++ {
				files[fmt.Sprintf("d%d/f%03d.txt", i%10, i)] = fmt.Sprintf("base %d\n", i)
			}
			(&gitInspector{dir: template, worktree: map[bool]string{true: "", false: template}[kind == "bare"]}).Commit(t, "main", toFiles(files))
			base := (&gitInspector{dir: template}).Head(t, "main")

			// How long the push itself takes, to spread the kills over it.
			full := time.Duration(0)
			for i := 0; i < 2; i++ {
				cmd, pushing := startKillChild(t, copyRepo(t, template), kind)
				<-pushing
				start := time.Now()
				if err := cmd.Wait(); err != nil {
					t.Fatalf("an uninterrupted push failed: %v", err)
				}
				full = max(full, time.Since(start))
			}
			landed := 0
			for i := 0; i < runs; i++ {
				dir := copyRepo(t, template)
				cmd, pushing := startKillChild(t, dir, kind)
				<-pushing
				time.Sleep(time.Duration(rand.Int64N(int64(full) + 1)))
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				waitGroupGone(t, cmd.Process.Pid) // an orphaned git-receive-pack may still be finishing
				if checkAfterKill(t, dir, kind, base) {
					landed++
				}
			}
			t.Logf("%s: %d of %d killed pushes had landed", kind, landed, runs)
		})
	}
}

// TestKilledPushHoldsTheLock: when the pushing process is killed after
// git-receive-pack has the whole pack, receive-pack goes on and moves the
// ref a moment later. Opening the target again waits for it, so whoever
// opens it next (a restarted server deciding whether an interrupted push
// landed) sees the ref as the push left it. A pre-receive hook that sleeps
// holds receive-pack between the two.
func TestKilledPushHoldsTheLock(t *testing.T) {
	if os.Getenv("AIRLOCK_KILL_CHILD") != "" {
		t.Skip("child")
	}
	template := t.TempDir()
	run(t, template, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
	(&gitInspector{dir: template}).Commit(t, "main", toFiles(map[string]string{"a.txt": "a\n"}))
	base := (&gitInspector{dir: template}).Head(t, "main")
	dir := copyRepo(t, template)
	// The hook says it has started through a FIFO: its write waits for
	// the test to read, and the test's read for the hook to write.
	started := filepath.Join(dir, "..", "hook-started")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	hook := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\necho started >'%s'\nsleep 1\n", started)
	// The hook is the test's own, in a directory the child has git look
	// in (a repository's own hooks never run).
	hooks := t.TempDir()
	if err := os.WriteFile(filepath.Join(hooks, "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AIRLOCK_KILL_HOOKS", hooks)
	cmd, pushing := startKillChild(t, dir, "bare")
	<-pushing
	ran := make(chan error, 1)
	go func() {
		f, err := os.Open(started) // returns once the hook opens it to write
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		ran <- err
	}()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pre-receive hook never ran")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	tgt, err := targets.OpenLocalBare(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := tgt.Head(context.Background(), "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "..", "new-commit"))
	if head.String() != strings.TrimSpace(string(want)) {
		t.Fatalf("opened while the killed push was still landing, main is at %s (the base is %s); want %s, where the push left it", head, base, want)
	}
	waitGroupGone(t, cmd.Process.Pid)
}

func toFiles(m map[string]string) map[string]targetFile {
	out := map[string]targetFile{}
	for p, d := range m {
		out[p] = targetFile{Data: d}
	}
	return out
}

func copyRepo(t *testing.T, template string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("cp", "-a", template, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return dir
}

// startKillChild starts a pushing process in its own process group; the
// channel closes when it is about to push.
func startKillChild(t *testing.T, dir, kind string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$")
	// A killed child cannot remove its temporary directories: they go
	// under one of ours.
	cmd.Env = append(gitEnv(), "AIRLOCK_KILL_CHILD="+dir, "AIRLOCK_KILL_KIND="+kind, "TMPDIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pushing := make(chan struct{})
	go func() {
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			if strings.HasPrefix(line, "PUSHING") {
				close(pushing)
				io.Copy(io.Discard, r)
				return
			}
			if err != nil {
				close(pushing)
				return
			}
		}
	}()
	return cmd, pushing
}

// waitGroupGone waits until no process of the group is left.
func waitGroupGone(t *testing.T, pgid int) {
	deadline := time.Now().Add(20 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("processes of group %d are still running", pgid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkAfterKill opens the target (recovering it) and checks it; it
// reports whether the push landed.
func checkAfterKill(t *testing.T, dir, kind string, base plumbing.Hash) bool {
	t.Helper()
	ctx := context.Background()
	var err error
	if kind == "bare" {
		_, err = targets.OpenLocalBare(ctx, dir)
	} else {
		_, err = targets.OpenLocal(ctx, dir)
	}
	if err != nil {
		t.Fatalf("reopening after the kill: %v", err)
	}
	insp := &gitInspector{dir: dir}
	head := insp.Head(t, "main")
	want, _ := os.ReadFile(filepath.Join(dir, "..", "new-commit"))
	landed := head != base
	switch {
	case !landed:
	case len(want) == 0:
		t.Fatalf("the branch moved to %s before the pushing process even knew its commit", head)
	case head.String() != strings.TrimSpace(string(want)):
		t.Fatalf("the branch is at %s: neither the old %s nor the new %s", head, base, want)
	}
	insp.Fsck(t)
	if kind == "worktree" {
		files := worktreeFiles(t, dir)
		tree := insp.Tree(t, head)
		if len(files) != len(tree) {
			t.Fatalf("the working tree has %d files, the branch's commit %d", len(files), len(tree))
		}
		for p, f := range tree {
			if files[p] != f {
				t.Fatalf("working tree %s = %q, the commit has %q", p, files[p].Data, f.Data)
			}
		}
		if st := run(t, dir, nil, nil, "status", "--porcelain"); st != "" {
			t.Fatalf("git status after recovery:\n%s", st)
		}
	}
	if refs := run(t, dir, nil, nil, "for-each-ref", "refs/airlock/"); refs != "" {
		t.Fatalf("temporary refs left behind:\n%s", refs)
	}
	return landed
}

// TestKillChild is the pushing process TestPushSurvivesSIGKILL kills.
func TestKillChild(t *testing.T) {
	dir := os.Getenv("AIRLOCK_KILL_CHILD")
	if dir == "" {
		t.Skip("run by TestPushSurvivesSIGKILL")
	}
	ctx := context.Background()
	if hooks := os.Getenv("AIRLOCK_KILL_HOOKS"); hooks != "" {
		targets.SetTestHooks(t, hooks)
	}
	var tgt targets.Target
	var err error
	if os.Getenv("AIRLOCK_KILL_KIND") == "bare" {
		tgt, err = targets.OpenLocalBare(ctx, dir)
	} else {
		tgt, err = targets.OpenLocal(ctx, dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	for i := 0; i < 300; i++ {
		p := fmt.Sprintf("d%d/f%03d.txt", i%10, i)
		switch i % 3 {
		case 0:
			sb.ws.WriteFile(p, []byte(fmt.Sprintf("changed %d\n", i)), 0o644)
		case 1:
			sb.ws.Remove(p)
		}
		sb.ws.WriteFile(fmt.Sprintf("new/n%03d.txt", i), []byte(fmt.Sprint("new ", i)), 0o644)
	}
	c, err := sb.area.Stage(nil, "a big change")
	if err != nil {
		t.Fatal(err)
	}
	// The parent learns the new commit before the push can land it.
	f, _ := os.Create(filepath.Join(dir, "..", "new-commit"))
	f.WriteString(c.ID.String())
	f.Sync()
	f.Close()
	fmt.Println("PUSHING")
	if _, err := sb.pushCommit(t, tgt, "refs/heads/main", head, c.ID, c.Tree); err != nil {
		t.Fatal(err)
	}
}
