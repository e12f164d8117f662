package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stateFault makes a server's state directory (its sessions and its
// ledger) unwritable under it, as the operator's machine would, and
// undoes it. Both need root (mounts); the test skips without.
type stateFault struct {
	name string
	// at is the directory the fault hits, under the state directory:
	// "." for all of it (sessions and ledger), "airlock/sessions" for
	// the sessions only, the ledger still writable.
	at    string
	apply func(t *testing.T, state string)
	undo  func(t *testing.T, state string)
}

// smallDisk mounts a tmpfs of size bytes at dir; it goes when the test ends.
func smallDisk(t *testing.T, dir string, size int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
}

var stateFaults = []stateFault{
	{"disk full", ".", fillDisk, freeDisk},
	{"sessions full", "airlock/sessions", fillDisk, freeDisk},
	{"read-only", ".",
		// A read-only bind mount over it: files the server opens from
		// here on (a journal's rewrite, the ledger's anchor, a summary)
		// cannot be written.
		func(t *testing.T, state string) {
			must(t, syscall.Mount(state, state, "", syscall.MS_BIND, ""))
			t.Cleanup(func() { _ = syscall.Unmount(state, syscall.MNT_DETACH) }) // if the test ends before undo
			must(t, syscall.Mount("", state, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""))
		},
		func(t *testing.T, state string) { must(t, syscall.Unmount(state, 0)) }},
}

// fillDisk has a file take what is left of the disk at dir, to the last
// block; freeDisk removes it.
func fillDisk(t *testing.T, dir string) {
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

func freeDisk(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, "filler"))) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// told says whether a failed call's answer tells the worker that what it
// did may not be kept, and what to do.
func told(answer string) bool {
	for _, s := range []string{"not saved", "nothing was pushed", "could not be saved", "could not be flushed", "a crash now would lose it"} {
		if strings.Contains(answer, s) {
			return true
		}
	}
	return false
}

// TestStateFaultLosesNoAnsweredCall: with the state directory full, then
// read-only, under a running server, every write_file and git_push
// answered ok is there after a SIGKILL and a restart, and every one that
// failed told the worker it was not saved; once the directory is mended,
// the next call saves what they did too.
func TestStateFaultLosesNoAnsweredCall(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	for _, fault := range stateFaults {
		t.Run(fault.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			root := t.TempDir()
			env := isolatedEnv(t, root)
			state := filepath.Join(root, "state")
			at := filepath.Join(state, fault.at)
			must(t, os.MkdirAll(at, 0o700))
			smallDisk(t, at, 2<<20)
			must(t, os.MkdirAll(filepath.Join(state, "airlock"), 0o700))
			bare := filepath.Join(root, "target.git")
			mustGit(t, env, root, "init", "-q", "--bare", "-b", "main", bare)
			workerFile := filepath.Join(root, "w.md")
			must(t, os.WriteFile(workerFile, []byte(fmt.Sprintf("---\nname: keeper\ngit:\n  default_target: {type: local-bare, path: %q, branch: main}\n---\n", bare)), 0o644))
			args := []string{"--worker", workerFile, "--auto-approve", "local-bare:" + bare}

			d := startDurable(t, ctx, bin, env, root, args...)
			acked := map[string]string{} // path -> content answered ok
			var ok, toldN, pushedOK int
			write := func(i int) {
				p := fmt.Sprintf("f%03d.txt", i)
				content := strings.Repeat(fmt.Sprintf("file %d\n", i), 1000)
				out, isErr := d.w.try("write_file", map[string]any{"path": p, "content": content})
				switch {
				case !isErr:
					acked[p] = content
					ok++
				case told(out):
					toldN++
				default:
					t.Fatalf("write_file %s failed without saying whether it was saved: %s", p, out)
				}
			}
			for i := 0; i < 10; i++ {
				write(i)
			}
			fault.apply(t, at)
			for i := 10; i < 60; i++ {
				write(i)
				if i%20 == 19 {
					out, isErr := d.w.try("git_stage", map[string]any{"message": fmt.Sprintf("up to %d", i)})
					if isErr && !told(out) {
						t.Fatalf("git_stage failed without saying whether it was saved: %s", out)
					}
					out, isErr = d.w.try("git_push", map[string]any{})
					switch {
					case !isErr:
						pushedOK++
					case told(out):
						toldN++
						head, _ := gitOut(t, env, root, "--git-dir", bare, "log", "-1", "--format=%s", "main") // none yet: an error
						if strings.Contains(out, "nothing was pushed") && strings.Contains(head, fmt.Sprintf("up to %d", i)) {
							t.Fatalf("git_push answered that nothing was pushed, but the branch has it: %s", out)
						}
					default:
						t.Fatalf("git_push failed without saying whether it was saved or pushed: %s", out)
					}
				}
			}
			if toldN == 0 {
				t.Fatalf("no call failed: the fault did not reach the server")
			}
			// Mended under the running server, as the answers advise: the
			// next call saves everything, what it was told was not
			// saved included.
			fault.undo(t, at)
			want := map[string]string{}
			for i := 0; i < 60; i++ {
				want[fmt.Sprintf("f%03d.txt", i)] = strings.Repeat(fmt.Sprintf("file %d\n", i), 1000)
			}
			d.w.call("write_file", map[string]any{"path": "mended.txt", "content": "mended\n"})
			want["mended.txt"] = "mended\n"
			_ = d.cmd.Process.Kill()
			d.wait(t)
			t.Logf("%s: %d write_file answered ok, %d git_push answered ok, %d calls told they were not saved (or pushed)", fault.name, ok, pushedOK, toldN)

			again := startDurable(t, ctx, bin, env, root, args...)
			mustContain(t, "stderr at the restart", again.stderr.String(), "resumed session")
			lost := 0
			for p, content := range acked {
				got, isErr := again.w.try("read_file", map[string]any{"path": p})
				if isErr || got != content {
					lost++
					t.Errorf("%s, answered ok before the SIGKILL, is lost: %.200s", p, got)
				}
			}
			if pushedOK > 0 {
				// Every push answered ok is on the branch and in the ledger.
				log := mustGit(t, env, root, "--git-dir", bare, "log", "--format=%s", "main")
				if n := strings.Count(log, "up to "); n < pushedOK {
					t.Errorf("%d push(es) answered ok, the branch has %d:\n%s", pushedOK, n, log)
				}
			}
			t.Logf("%s: %d of %d acknowledged calls lost", fault.name, lost, ok)
			for p, content := range want {
				if got, isErr := again.w.try("read_file", map[string]any{"path": p}); isErr || got != content {
					t.Errorf("%s, saved by the call after the state directory was mended, is missing: %.200s", p, got)
				}
			}
			_ = again.cs.Close()
			again.wait(t)
		})
	}
}
