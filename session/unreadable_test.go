package session_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

// readFails reads p, which must fail as unreadable content, with an error
// that gives advice (each advice string is followed by the test).
func readFails(t *testing.T, ws *memfs.Workspace, p string, advice ...string) {
	t.Helper()
	_, err := ws.ReadFile(p)
	if !errors.Is(err, memfs.ErrUnavailable) {
		t.Fatalf("reading %s: %v, want content unavailable", p, err)
	}
	for _, a := range advice {
		if !strings.Contains(err.Error(), a) {
			t.Fatalf("reading %s: %v\nwant the advice %q", p, err, a)
		}
	}
}

func readIs(t *testing.T, ws *memfs.Workspace, p, want string) {
	t.Helper()
	got, err := ws.ReadFile(p)
	if err != nil || string(got) != want {
		t.Fatalf("reading %s: %q, %v; want %q", p, got, err, want)
	}
}

// A base file whose blob its repository pruned (the branch rewritten,
// then git gc): the read says to git_pull, which brings the workspace to
// the branch's new commit.
func TestPrunedBlobAdviceWorks(t *testing.T) {
	dir := repo(t, false, map[string]string{"a.txt": "old a\n", "keep.txt": "kept\n"})
	e := newEnv(t, dir, config{})
	ws := e.s.Workspace()
	git(t, dir, "checkout", "-q", "--orphan", "rewrite")
	must(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("new a\n"), 0o644))
	git(t, dir, "commit", "-qam", "rewritten")
	git(t, dir, "branch", "-f", "main", "rewrite")
	git(t, dir, "checkout", "-q", "main")
	git(t, dir, "branch", "-D", "rewrite")
	git(t, dir, "reflog", "expire", "--expire=now", "--all")
	git(t, dir, "gc", "-q", "--prune=now")

	readFails(t, ws, "a.txt", "is no longer in", "git_pull with no arguments")
	readIs(t, ws, "keep.txt", "kept\n")
	if _, err := e.s.Pull(context.Background(), "", nil, ""); err != nil {
		t.Fatalf("following the advice, git_pull: %v", err)
	}
	readIs(t, ws, "a.txt", "new a\n")
}

// Blobs the worker's moved files name are lost from the repository
// although its branch still names them: the diff names those files and
// goes on, the git_pull the error advises first cannot help (the branch
// has not moved), and then the rest of the advice, to write the file
// anew or delete it, works.
func TestLostBlobAdviceWorks(t *testing.T) {
	dir := repo(t, false, map[string]string{"b.txt": "b, moved\n", "c.txt": "c, moved\n", "keep.txt": "kept\n"})
	e := newEnv(t, dir, config{})
	ws := e.s.Workspace()
	must(t, ws.Rename("b.txt", "moved-b.txt"))
	must(t, ws.Rename("c.txt", "moved-c.txt"))
	for _, f := range []string{"b.txt", "c.txt"} {
		loseBlob(t, dir, f)
	}
	readFails(t, ws, "moved-b.txt", "git_pull with no arguments")
	readIs(t, ws, "keep.txt", "kept\n")
	p, _, err := e.s.Diff("")
	if err != nil {
		t.Fatalf("the diff stops at an unreadable file: %v", err)
	}
	if d := p.String(); !strings.Contains(d, "moved-c.txt") || !strings.Contains(d, "Content unavailable: ") {
		t.Fatalf("the diff does not say which file it cannot show:\n%s", d)
	}
	if _, err := e.s.Pull(context.Background(), "", nil, ""); err != nil {
		t.Fatalf("following the advice, git_pull: %v", err)
	}
	readFails(t, ws, "moved-c.txt", "write it anew (write_file)", "delete it (delete_file)")
	must(t, ws.WriteFile("moved-c.txt", []byte("c, written anew\n"), 0o644))
	readIs(t, ws, "moved-c.txt", "c, written anew\n")
	must(t, ws.Remove("moved-b.txt"))
	if _, err := e.s.Stage(nil, "c anew"); err != nil {
		t.Fatalf("staging after following the advice: %v", err)
	}
}

// A session resumed while the repository its base came from is gone:
// a read says to restore the repository and git_pull, or to git_pull the
// file from another target that has it. Both work.
func TestSourceGoneAdviceWorks(t *testing.T) {
	files := map[string]string{"f1.txt": "one\n", "f2.txt": "two\n", "f3.txt": "three\n"}
	bare := repo(t, true, files)
	// Another target that has f1.txt's content (and no other).
	backup := repo(t, true, map[string]string{"f1.txt": "one\n"})
	d := newDurableWorker(t, &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"},
		Targets:       map[string]*worker.TargetSpec{"backup": {Type: "local-bare", Path: backup, Branch: "main"}},
		AutoPull:      []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}}},
	}, approval.Policy{}, nil)
	must(t, d.s.Save())
	must(t, os.Rename(bare, bare+".gone"))
	d.crashAndResume(t)
	ws := d.s.Workspace()
	readFails(t, ws, "f1.txt", "restore that repository and git_pull with no arguments", "git_pull the file from another target that has it")

	// The advice, one way: git_pull the file from another target.
	if _, err := d.s.Pull(context.Background(), "backup", []string{"f1.txt"}, ""); err != nil {
		t.Fatalf("following the advice, git_pull from backup: %v", err)
	}
	readIs(t, ws, "f1.txt", "one\n")
	readFails(t, ws, "f2.txt")
	// The other: restore the repository, git_pull with no arguments.
	must(t, os.Rename(bare+".gone", bare))
	if _, err := d.s.Pull(context.Background(), "", nil, ""); err != nil {
		t.Fatalf("following the advice, git_pull: %v", err)
	}
	readIs(t, ws, "f2.txt", "two\n")
	readIs(t, ws, "f3.txt", "three\n")
}

// A damaged object (a loose object rewritten with other bytes of the same
// size): the read says the repository is damaged and that git fsck says
// where, which it does; writing the file anew works.
func TestDamagedObjectAdviceWorks(t *testing.T) {
	dir := repo(t, false, map[string]string{"a.txt": "good!\n", "b.txt": "fine\n"})
	e := newEnv(t, dir, config{})
	id := strings.TrimSpace(git(t, dir, "rev-parse", "HEAD:a.txt"))
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte("blob 6\x00evil!\n"))
	zw.Close()
	obj := filepath.Join(dir, ".git", "objects", id[:2], id[2:])
	os.Chmod(obj, 0o644)
	must(t, os.WriteFile(obj, z.Bytes(), 0o444))
	must(t, os.Remove(filepath.Join(dir, "a.txt"))) // else read from the working tree, as committed

	ws := e.s.Workspace()
	readFails(t, ws, "a.txt", "damaged", "git fsck", "write the file anew (write_file)")
	readIs(t, ws, "b.txt", "fine\n")
	if out, _ := gitMayFail(dir, "fsck", "--no-dangling"); !strings.Contains(out, id) {
		t.Fatalf("git fsck does not name %s:\n%s", id, out)
	}
	must(t, ws.WriteFile("a.txt", []byte("good again\n"), 0o644))
	readIs(t, ws, "a.txt", "good again\n")
}

// gitMayFail runs git in dir and returns what it printed, whatever its
// status (git fsck exits non-zero on what it finds).
func gitMayFail(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gittest.Env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A run on a workspace with a file whose content is lost: the command
// runs on everything else, the answer names the file and why, and the
// next run, once the file was written anew, sees it.
func TestRunWithAnUnreadableFile(t *testing.T) {
	dir := repo(t, false, map[string]string{"lost.txt": "lost\n", "ok.txt": "ok\n", "sub/also.txt": "also\n"})
	e := runEnv(t, dir, session.RunOptions{}, config{})
	loseBlob(t, dir, "lost.txt")
	res, err := e.s.Run(context.Background(), session.RunArgs{Command: "cat ok.txt sub/also.txt; test -e lost.txt || echo absent"}, nil)
	if err != nil {
		t.Fatalf("one unreadable file stops the run: %v", err)
	}
	if res.Exit != 0 || res.Stdout != "ok\nalso\nabsent\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.Exit, res.Stdout, res.Stderr)
	}
	if len(res.Unread) != 1 || res.Unread[0].Path != "lost.txt" || !errors.Is(res.Unread[0].Err, memfs.ErrUnavailable) {
		t.Fatalf("unread: %v", res.Unread)
	}
	if len(res.Deleted) != 0 {
		t.Fatalf("what the run could not see is not deleted: %v", res.Deleted)
	}
	must(t, e.s.Workspace().WriteFile("lost.txt", []byte("found\n"), 0o644))
	res, err = e.s.Run(context.Background(), session.RunArgs{Command: "cat lost.txt"}, nil)
	if err != nil || res.Stdout != "found\n" || len(res.Unread) != 0 {
		t.Fatalf("the next run: %v %q %v", err, res.Stdout, res.Unread)
	}
}

// airlock sessions export of a session one of whose base files was lost:
// every other file is written, and that one is named.
func TestExportWithAnUnreadableFile(t *testing.T) {
	dir := repo(t, false, map[string]string{"lost.txt": "lost\n", "ok.txt": "ok\n", "sub/also.txt": "also\n"})
	d := newDurable(t, dir, approval.Policy{}, nil)
	must(t, d.s.Workspace().WriteFile("new.txt", []byte("new\n"), 0o644))
	must(t, d.s.Save())
	loseBlob(t, dir, "lost.txt")
	d.s.Close()
	d.s = nil
	in, err := session.Inspect(session.Local(d.root), d.id)
	must(t, err)
	out := filepath.Join(t.TempDir(), "export")
	n, unread, err := in.ExportFiles(out)
	if err != nil {
		t.Fatalf("one unreadable file stops the export: %v", err)
	}
	if n != 3 || len(unread) != 1 || unread[0].Path != "lost.txt" || !strings.Contains(unread[0].Err.Error(), "write it anew") {
		t.Fatalf("wrote %d, unread %v", n, unread)
	}
	for p, want := range map[string]string{"ok.txt": "ok\n", "sub/also.txt": "also\n", "new.txt": "new\n"} {
		if got, err := os.ReadFile(filepath.Join(out, p)); err != nil || string(got) != want {
			t.Fatalf("%s: %q %v", p, got, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(out, "lost.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lost.txt was written: %v", err)
	}
}

// loseBlob removes the content of the committed file p from the working-
// tree repository dir: its loose object (as a fresh commit leaves it) and
// its checked-out copy, which a lazy read would otherwise take.
func loseBlob(t *testing.T, dir, p string) {
	t.Helper()
	id := strings.TrimSpace(git(t, dir, "rev-parse", "HEAD:"+p))
	must(t, os.Remove(filepath.Join(dir, ".git", "objects", id[:2], id[2:])))
	must(t, os.Remove(filepath.Join(dir, filepath.FromSlash(p))))
}
