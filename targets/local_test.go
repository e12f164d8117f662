package targets_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/targettest"
)

func gitEnv(extra ...string) []string { return targettest.GitEnv(extra...) }

func run(t testing.TB, dir string, stdin []byte, env []string, args ...string) string {
	t.Helper()
	return targettest.Git(t, dir, stdin, env, args...)
}

// gitInspector looks at a repository with the git CLI. With worktree set,
// commits to the checked-out branch are made the way a person would, in
// the working tree, so that it stays clean.
type gitInspector struct {
	dir      string
	worktree string // set when the branch is checked out there
}

func (g *gitInspector) Head(t testing.TB, branch string) plumbing.Hash {
	cmd := exec.Command("git", "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	cmd.Dir, cmd.Env = g.dir, gitEnv()
	out, err := cmd.Output()
	if err != nil {
		return plumbing.ZeroHash
	}
	return plumbing.NewHash(strings.TrimSpace(string(out)))
}

func (g *gitInspector) Commit(t testing.TB, branch string, files map[string]targettest.File) plumbing.Hash {
	t.Helper()
	if g.worktree != "" {
		entries, _ := os.ReadDir(g.worktree)
		for _, e := range entries {
			if e.Name() != ".git" {
				os.RemoveAll(filepath.Join(g.worktree, e.Name()))
			}
		}
		for p, f := range files {
			full := filepath.Join(g.worktree, p)
			os.MkdirAll(filepath.Dir(full), 0o755)
			if f.Symlink {
				os.Symlink(f.Data, full)
				continue
			}
			mode := os.FileMode(0o644)
			if f.Executable {
				mode = 0o755
			}
			os.WriteFile(full, []byte(f.Data), mode)
			os.Chmod(full, mode)
		}
		run(t, g.worktree, nil, nil, "add", "-A")
		run(t, g.worktree, nil, nil, "commit", "-q", "--allow-empty", "-m", "commit by someone else")
		return g.Head(t, branch)
	}
	idx := filepath.Join(t.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + idx}
	var info bytes.Buffer
	for p, f := range files {
		blob := strings.TrimSpace(run(t, g.dir, []byte(f.Data), nil, "hash-object", "-w", "--stdin"))
		mode := "100644"
		switch {
		case f.Symlink:
			mode = "120000"
		case f.Executable:
			mode = "100755"
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", mode, blob, p)
	}
	run(t, g.dir, info.Bytes(), env, "update-index", "-z", "--index-info")
	tree := strings.TrimSpace(run(t, g.dir, nil, env, "write-tree"))
	args := []string{"commit-tree", tree, "-m", "commit by someone else"}
	old := g.Head(t, branch)
	if !old.IsZero() {
		args = append(args, "-p", old.String())
	}
	id := strings.TrimSpace(run(t, g.dir, nil, nil, args...))
	run(t, g.dir, nil, nil, "update-ref", "refs/heads/"+branch, id)
	return plumbing.NewHash(id)
}

func (g *gitInspector) Tree(t testing.TB, commit plumbing.Hash) map[string]targettest.File {
	t.Helper()
	out := map[string]targettest.File{}
	ls := run(t, g.dir, nil, nil, "ls-tree", "-r", "-z", "--full-tree", commit.String())
	var blobs []string
	type ent struct{ mode, path string }
	var ents []ent
	for _, line := range strings.Split(ls, "\x00") {
		if line == "" {
			continue
		}
		meta, path, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		ents = append(ents, ent{f[0], path})
		blobs = append(blobs, f[2])
	}
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Dir, cmd.Env = g.dir, gitEnv()
	cmd.Stdin = strings.NewReader(strings.Join(blobs, "\n") + "\n")
	raw, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	for _, e := range ents {
		header, _ := r.ReadString('\n')
		size, _ := strconv.Atoi(strings.Fields(header)[2])
		data := make([]byte, size)
		io.ReadFull(r, data)
		r.ReadByte()
		out[e.path] = targettest.File{Data: string(data), Executable: e.mode == "100755", Symlink: e.mode == "120000"}
	}
	return out
}

func (g *gitInspector) Fsck(t testing.TB) {
	t.Helper()
	cmd := exec.Command("git", "fsck", "--strict", "--no-dangling")
	cmd.Dir, cmd.Env = g.dir, gitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
}

func TestLocalBare(t *testing.T) {
	t.Parallel() // long and independent: alongside the others, the package stays well within Go's default timeout
	targettest.Run(t, targettest.Harness{Short: !longTests, New: func(t *testing.T) (targets.Target, targettest.Inspector) {
		dir := t.TempDir()
		run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
		tgt, err := targets.OpenLocalBare(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		return tgt, &gitInspector{dir: dir}
	}})
}

// A working-tree repository, pushed to on a branch that is not checked out.
func TestLocalOtherBranch(t *testing.T) {
	t.Parallel() // long and independent: alongside the others, the package stays well within Go's default timeout
	targettest.Run(t, targettest.Harness{Branch: "feature", Short: !longTests, New: func(t *testing.T) (targets.Target, targettest.Inspector) {
		dir := t.TempDir()
		run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
		tgt, err := targets.OpenLocal(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		return tgt, &gitInspector{dir: dir}
	}})
}

// A working-tree repository, pushed to on its checked-out branch: the
// files and the index follow.
func TestLocalCheckedOutBranch(t *testing.T) {
	t.Parallel() // long and independent: alongside the others, the package stays well within Go's default timeout
	var dir string
	targettest.Run(t, targettest.Harness{
		Short: !longTests,
		New: func(t *testing.T) (targets.Target, targettest.Inspector) {
			dir = t.TempDir()
			run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
			tgt, err := targets.OpenLocal(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			return tgt, &gitInspector{dir: dir, worktree: dir}
		},
		Check: func(t testing.TB, want map[string]targettest.File) {
			t.Helper()
			got := worktreeFiles(t, dir)
			if len(got) != len(want) {
				t.Errorf("the working tree has %d files, the branch %d", len(got), len(want))
			}
			for p, w := range want {
				if got[p] != w {
					t.Errorf("working tree %s = %+v, want %+v", p, got[p], w)
				}
			}
			if st := run(t, dir, nil, nil, "status", "--porcelain"); st != "" {
				t.Errorf("git status after the push:\n%s", st)
			}
		},
	})
}

// worktreeFiles reads every file of a working tree but .git.
func worktreeFiles(t testing.TB, dir string) map[string]targettest.File {
	t.Helper()
	out := map[string]targettest.File{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".git" {
			return filepath.SkipDir
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[filepath.ToSlash(rel)] = targettest.File{Data: target, Symlink: true}
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			out[filepath.ToSlash(rel)] = targettest.File{Data: string(data), Executable: fi.Mode()&0o100 != 0}
		}
		return nil
	})
	return out
}

type targetFile = targettest.File
