package gitdir_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/targets/gitdir"
	"github.com/airlock-dev/airlock/targets/targettest"
)

// ProbeLocal answers what git answers, from the files alone: for each kind
// of place a worker file may name, the repository, its kind, its git
// directory and its HEAD are git rev-parse's and git symbolic-ref's.
func TestProbeLocalAgreesWithGit(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	os.MkdirAll(filepath.Join(work, "sub", "deeper"), 0o755)
	run(t, root, nil, nil, "init", "-q", "-b", "main", work)
	os.WriteFile(filepath.Join(work, "sub", "f.txt"), []byte("f\n"), 0o644)
	run(t, work, nil, nil, "add", "-A")
	run(t, work, nil, nil, "commit", "-qm", "one")
	run(t, work, nil, nil, "branch", "other")
	run(t, work, nil, nil, "pack-refs", "--all") // branches in packed-refs only
	bare := filepath.Join(root, "bare.git")
	run(t, root, nil, nil, "clone", "-q", "--bare", work, bare)
	linked := filepath.Join(root, "linked")
	run(t, work, nil, nil, "worktree", "add", "-q", linked, "other")
	detached := filepath.Join(root, "detached")
	run(t, root, nil, nil, "clone", "-q", work, detached)
	run(t, detached, nil, nil, "checkout", "-q", "--detach", "HEAD")
	unborn := filepath.Join(root, "unborn")
	run(t, root, nil, nil, "init", "-q", "-b", "trunk", unborn)

	for _, path := range []string{work, filepath.Join(work, "sub", "deeper"), bare, linked, detached, unborn} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			p, err := gitdir.ProbeLocal(path)
			if err != nil {
				t.Fatal(err)
			}
			isBare := strings.TrimSpace(run(t, path, nil, nil, "rev-parse", "--is-bare-repository")) == "true"
			gitDir := strings.TrimSpace(run(t, path, nil, nil, "rev-parse", "--absolute-git-dir"))
			top := gitDir
			if !isBare {
				top = strings.TrimSpace(run(t, path, nil, nil, "rev-parse", "--show-toplevel"))
			}
			if p.Bare != isBare || p.Path != top || p.GitDir != gitDir {
				t.Errorf("probe: bare %v, path %s, git dir %s; git: bare %v, top %s, git dir %s", p.Bare, p.Path, p.GitDir, isBare, top, gitDir)
			}
			head, err := exec.Command("git", "-C", path, "symbolic-ref", "-q", "HEAD").Output()
			if want := strings.TrimSpace(string(head)); err == nil && p.Head != want || err != nil && p.Head != "" {
				t.Errorf("probe: HEAD %q; git symbolic-ref: %q (%v)", p.Head, want, err)
			}
			if p.Head == "" {
				want := strings.TrimSpace(run(t, path, nil, nil, "rev-parse", "HEAD"))
				if p.Detached.String() != want {
					t.Errorf("probe: detached at %s, git: %s", p.Detached, want)
				}
			}
		})
	}

	// The refs, loose and packed, as git has them.
	p, err := gitdir.ProbeLocal(linked)
	if err != nil {
		t.Fatal(err)
	}
	heads, err := p.Heads("refs/heads/main", "refs/heads/other", "refs/heads/nope")
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range []string{"main", "other"} {
		if want := strings.TrimSpace(run(t, work, nil, nil, "rev-parse", b)); heads[i].String() != want {
			t.Errorf("%s: %s, git says %s", b, heads[i], want)
		}
	}
	if !heads[2].IsZero() {
		t.Errorf("a branch that does not exist reads %s", heads[2])
	}
	if names, err := p.BranchNames(); err != nil || strings.Join(names, " ") != "main other" {
		t.Errorf("BranchNames = %v, %v", names, err)
	}
	if heads, err := mustProbe(t, unborn).Heads("refs/heads/trunk"); err != nil || heads[0] != plumbing.ZeroHash {
		t.Errorf("an unborn branch reads %v, %v", heads, err)
	}

	// What is not a repository, and why.
	file := filepath.Join(root, "file.txt")
	os.WriteFile(file, []byte("x"), 0o644)
	plain := filepath.Join(root, "plain")
	os.Mkdir(plain, 0o755)
	for _, c := range []struct {
		path string
		want error
		says string
	}{
		{filepath.Join(root, "missing"), fs.ErrNotExist, ""},
		{file, gitdir.ErrNotRepository, "is a file"},
		{plain, gitdir.ErrNotRepository, "has a .git"},
		{filepath.Join(work, ".git"), gitdir.ErrNotRepository, "is the git directory of " + work},
	} {
		_, err := gitdir.ProbeLocal(c.path)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ProbeLocal(%s) = %v; want %v saying %q", c.path, err, c.want, c.says)
		}
		if c.want == gitdir.ErrNotRepository {
			if out, err := exec.Command("git", "-C", c.path, "rev-parse", "--show-toplevel").CombinedOutput(); err == nil {
				t.Errorf("git finds a repository at %s: %s", c.path, out)
			}
		}
	}
}

func run(t testing.TB, dir string, stdin []byte, env []string, args ...string) string {
	t.Helper()
	return targettest.Git(t, dir, stdin, env, args...)
}

func mustProbe(t *testing.T, path string) *gitdir.Probe {
	t.Helper()
	p, err := gitdir.ProbeLocal(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
