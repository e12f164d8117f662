package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// durableServer is an airlock serve process over stdio with its worker.
type durableServer struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	cs     *mcp.ClientSession
	w      *worker
	stdin  interface{ Close() error }
}

// startDurable starts airlock serve in root's environment, connected
// through pipes the test holds, so that it can close stdin or signal it.
func startDurable(t *testing.T, ctx context.Context, bin string, env []string, root string, args ...string) *durableServer {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Env, cmd.Dir = env, root
	d := &durableServer{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = d.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.stdin = stdin
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("airlock serve's stderr:\n%s", d.stderr.String())
		}
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "airlock-durable", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, d.stderr.String())
	}
	d.cs = cs
	d.w = &worker{t: t, ctx: ctx, cs: cs}
	return d
}

// bareWorker makes a test's root, its isolated environment, and a worker
// file (worker "keeper") whose default target is a new bare repository.
func bareWorker(t *testing.T) (root string, env []string, workerFile string) {
	t.Helper()
	root = t.TempDir()
	env = isolatedEnv(t, root)
	bare := filepath.Join(root, "target.git")
	mustGit(t, env, root, "init", "-q", "--bare", "-b", "main", bare)
	workerFile = filepath.Join(root, "w.md")
	if err := os.WriteFile(workerFile, []byte(fmt.Sprintf("---\nname: keeper\ngit:\n  default_target: {type: local-bare, path: %q, branch: main}\n---\n", bare)), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, env, workerFile
}

// wait waits for the process to exit by itself.
func (d *durableServer) wait(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("airlock serve did not exit:\n%s", d.stderr.String())
	}
}

// observe lists what a worker sees: every file with its content, the
// staged commits, the checkpoints.
func observe(t *testing.T, w *worker) (files []string, status, cps string) {
	t.Helper()
	var walk func(dir string)
	walk = func(dir string) {
		out := w.call("list_files", map[string]any{"path": dir})
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			if name == "" || strings.HasPrefix(line, "(") {
				continue
			}
			p := name
			if dir != "." {
				p = dir + "/" + name
			}
			if strings.HasSuffix(name, "/") {
				walk(strings.TrimSuffix(p, "/"))
				continue
			}
			files = append(files, p+"="+w.call("read_file", map[string]any{"path": p}))
		}
	}
	walk(".")
	sort.Strings(files)
	return files, w.call("git_status", nil), w.call("list_checkpoints", nil)
}

// TestSessionSurvivesEveryEnding: 30 files, two staged commits and two
// checkpoints outlive each way a server ends (SIGKILL, SIGTERM, SIGINT,
// a closed stdin); a restart with the same worker resumes them and says
// so, and the graceful endings say on stderr where the session is.
func TestSessionSurvivesEveryEnding(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	for _, ending := range []string{"SIGKILL", "SIGTERM", "SIGINT", "stdin closed"} {
		t.Run(ending, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			root, env, workerFile := bareWorker(t)

			d := startDurable(t, ctx, bin, env, root, "--worker", workerFile)
			w := d.w
			for i := 0; i < 30; i++ {
				w.call("write_file", map[string]any{"path": fmt.Sprintf("d%d/f%02d.txt", i%3, i), "content": fmt.Sprintf("file %d\n", i)})
				switch i {
				case 9:
					w.call("checkpoint", map[string]any{"name": "first"})
				case 14:
					w.call("git_stage", map[string]any{"message": "fifteen files"})
				case 19:
					w.call("checkpoint", map[string]any{"name": "second"})
				case 24:
					w.call("git_stage", map[string]any{"message": "ten more"})
				}
			}
			files, status, cps := observe(t, w)
			if len(files) != 30 || strings.Count(cps, "first")+strings.Count(cps, "second") < 2 {
				t.Fatalf("before: %d files, checkpoints %q", len(files), cps)
			}

			switch ending {
			case "SIGKILL":
				d.cmd.Process.Kill()
			case "SIGTERM":
				d.cmd.Process.Signal(syscall.SIGTERM)
			case "SIGINT":
				d.cmd.Process.Signal(syscall.SIGINT)
			case "stdin closed":
				d.stdin.Close()
			}
			d.wait(t)
			if ending != "SIGKILL" {
				mustContain(t, "stderr at the end", d.stderr.String(), "is saved in", "run airlock serve again with the same worker")
			}

			again := startDurable(t, ctx, bin, env, root, "--worker", workerFile)
			mustContain(t, "stderr at the restart", again.stderr.String(), "resumed session", "2 staged commit(s)", "2 checkpoint(s)")
			if inst := again.cs.InitializeResult().Instructions; !strings.Contains(inst, "was resumed") || !strings.Contains(inst, "2 staged commit(s)") {
				t.Fatalf("the worker is not told what was recovered: %q", inst)
			}
			files2, status2, cps2 := observe(t, again.w)
			if fmt.Sprint(files2) != fmt.Sprint(files) {
				t.Fatalf("files after %s:\n%v\nwant\n%v", ending, files2, files)
			}
			if status2 != status || cps2 != cps {
				t.Fatalf("after %s:\nstatus %s\nwant %s\ncheckpoints %s\nwant %s", ending, status2, status, cps2, cps)
			}
			// The resumed session goes on: a push of both commits lands.
			again.w.call("git_stage", map[string]any{"message": "the rest"})
			again.cs.Close()
			again.wait(t)

			// --new starts afresh; the old session stays for airlock sessions.
			fresh := startDurable(t, ctx, bin, env, root, "--worker", workerFile, "--new")
			if f, _, _ := observe(t, fresh.w); len(f) != 0 {
				t.Fatalf("--new sees %d files", len(f))
			}
			fresh.cs.Close()
			fresh.wait(t)
		})
	}
}

// TestSessionsCommand: a person sees a dead session's work and rescues it
// without an agent: list, show, export of the files, the staged commits
// as a bundle that git fetches, rm.
func TestSessionsCommand(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := t.TempDir()
	env := isolatedEnv(t, root)
	repo := filepath.Join(root, "project")
	os.MkdirAll(repo, 0o755)
	mustGit(t, env, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# p\n"), 0o644)
	mustGit(t, env, repo, "add", "-A")
	mustGit(t, env, repo, "commit", "-qm", "init")
	mustGit(t, env, repo, "branch", "agent")
	workerFile := filepath.Join(root, "w.md")
	os.WriteFile(workerFile, []byte(fmt.Sprintf("---\nname: rescuer\ngit:\n  default_target: {type: local, path: %q, branch: agent}\n  auto_pull: [{path: .}]\n---\n", repo)), 0o644)

	d := startDurable(t, ctx, bin, env, root, "--worker", workerFile)
	d.w.call("write_file", map[string]any{"path": "src/app.go", "content": "package app\n"})
	d.w.call("write_file", map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho hi\n"})
	d.w.call("git_stage", map[string]any{"message": "Add the app"})
	d.w.call("write_file", map[string]any{"path": "notes.txt", "content": "unstaged\n"})
	d.w.call("checkpoint", map[string]any{"name": "before-lunch"})
	d.cmd.Process.Kill()
	d.wait(t)

	cli := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	list, err := cli("sessions", "list")
	if err != nil {
		t.Fatalf("sessions list: %v\n%s", err, list)
	}
	mustContain(t, "sessions list", list, "rescuer", "crashed")
	id := strings.Fields(strings.Split(strings.TrimSpace(list), "\n")[1])[0]

	show, err := cli("sessions", "show", id)
	if err != nil {
		t.Fatalf("sessions show: %v\n%s", err, show)
	}
	// The operator's words for a change, as the README shows them.
	mustContain(t, "sessions show", show, "  created  notes.txt", "Add the app", "before-lunch", "staged commits (1)")

	out := filepath.Join(root, "rescued")
	bundle := filepath.Join(root, "work.bundle")
	if msg, err := cli("sessions", "export", id, out, "--bundle", bundle); err != nil {
		t.Fatalf("sessions export: %v\n%s", err, msg)
	}
	for p, want := range map[string]string{"README.md": "# p\n", "src/app.go": "package app\n", "notes.txt": "unstaged\n"} {
		if got, err := os.ReadFile(filepath.Join(out, p)); err != nil || string(got) != want {
			t.Fatalf("exported %s: %q, %v", p, got, err)
		}
	}
	if msg, err := cli("sessions", "export", id, out); err == nil || !strings.Contains(msg, "new or empty") {
		t.Fatalf("export over a full directory: %v %s", err, msg)
	}
	mustGit(t, env, repo, "bundle", "verify", bundle)
	mustGit(t, env, repo, "fetch", "-q", bundle, "refs/heads/airlock/"+id+":refs/heads/rescued")
	if got := mustGit(t, env, repo, "log", "-1", "--format=%s", "rescued"); strings.TrimSpace(got) != "Add the app" {
		t.Fatalf("the bundle's commit: %q", got)
	}
	if got := mustGit(t, env, repo, "show", "rescued:src/app.go"); got != "package app\n" {
		t.Fatalf("the bundle's file: %q", got)
	}

	if msg, err := cli("sessions", "show", "../../etc"); err == nil {
		t.Fatalf("a path as a session id was read: %s", msg)
	}
	if msg, err := cli("sessions", "rm", id); err != nil {
		t.Fatalf("sessions rm: %v %s", err, msg)
	}
	if list, _ := cli("sessions", "list"); !strings.Contains(list, "no sessions") {
		t.Fatalf("after rm: %s", list)
	}
}
