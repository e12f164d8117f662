package staging_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/staging"
)

// upstream is a repository the sandbox pulls from, which others commit to.
type upstream struct {
	t   *testing.T
	dir string
}

func newUpstream(t *testing.T, files map[string]string) *upstream {
	u := &upstream{t, newRepo(t)}
	u.commit(files, nil)
	return u
}

// commit writes files (content "" deletes) and commits.
func (u *upstream) commit(files map[string]string, remove []string) plumbing.Hash {
	writeDisk(u.t, u.dir, files)
	for _, p := range remove {
		os.RemoveAll(filepath.Join(u.dir, p))
	}
	run(u.t, u.dir, "add", "-A")
	gitWith(u.t, u.dir, []string{"GIT_AUTHOR_NAME=o", "GIT_AUTHOR_EMAIL=o@b", "GIT_COMMITTER_NAME=o", "GIT_COMMITTER_EMAIL=o@b"}, "commit", "-qm", "upstream")
	return plumbing.NewHash(strings.TrimSpace(run(u.t, u.dir, "rev-parse", "main")))
}

func TestRebaseOntoMovedTarget(t *testing.T) {
	up := newUpstream(t, map[string]string{"mine.txt": "1\n", "theirs.txt": "1\n", "gone.txt": "g\n", "keep.txt": "k\n"})
	e := newEnv(t)
	base := importRepo(t, e.store, up.dir)
	_, err := e.area.SeedFrom(base, nil)
	must(t, err)
	e.write(t, "mine.txt", "mine\n")
	c1, err := e.area.Stage(nil, "My change")
	must(t, err)
	e.write(t, "new-here.txt", "unstaged\n")

	moved := up.commit(map[string]string{"theirs.txt": "theirs\n", "added-there.txt": "a\n"}, []string{"gone.txt"})
	importRepo(t, e.store, up.dir)
	res, err := e.area.Rebase(moved)
	must(t, err)
	chain := e.area.Commits()
	if len(chain) != 1 || chain[0].Parent != moved || res.Rebuilt[c1.ID] != chain[0].ID || chain[0].Message != c1.Message {
		t.Fatalf("chain after rebase: %+v, result %+v", chain, res)
	}
	if e.area.Base() != moved {
		t.Errorf("base %s, want %s", e.area.Base(), moved)
	}
	if !reflect.DeepEqual(res.Updated, []string{"added-there.txt", "gone.txt", "theirs.txt"}) {
		t.Errorf("updated %v", res.Updated)
	}
	// The workspace has the target's changes, and the worker's unstaged
	// work is still the only unstaged change.
	if got, _ := e.ws.ReadFile("theirs.txt"); string(got) != "theirs\n" {
		t.Errorf("theirs.txt = %q", got)
	}
	if _, err := e.ws.Stat("gone.txt"); err == nil {
		t.Error("gone.txt, deleted at the target, is still in the workspace")
	}
	if st := e.area.Status(); len(st.Unstaged) != 1 || st.Unstaged[0].Path != "new-here.txt" {
		t.Errorf("unstaged after rebase: %+v", st.Unstaged)
	}
	repo := newRepo(t)
	export(t, e.store, repo, chain[0].ID)
	fsck(t, repo)
	if got := run(t, repo, "diff", "--no-renames", "--name-status", moved.String(), "main"); got != "M\tmine.txt\n" {
		t.Errorf("the rebased commit changes:\n%s", got)
	}
}

func TestRebaseRefusesOverlaps(t *testing.T) {
	cases := []struct {
		name     string
		mine     func(e *env)
		unstaged bool
		theirs   map[string]string
		remove   []string
		want     []string
	}{
		{name: "same file staged", mine: func(e *env) { e.write(t, "a.txt", "mine") }, theirs: map[string]string{"a.txt": "theirs"}, want: []string{"a.txt"}},
		{name: "same file unstaged", unstaged: true, mine: func(e *env) { e.write(t, "a.txt", "mine") }, theirs: map[string]string{"a.txt": "theirs"}, want: []string{"a.txt"}},
		{name: "their file where my directory goes", mine: func(e *env) { e.write(t, "x/inner.txt", "mine") }, theirs: map[string]string{"x": "a file"}, want: []string{"x"}},
		{name: "their deletion of my edit", mine: func(e *env) { e.write(t, "b.txt", "mine") }, remove: []string{"b.txt"}, want: []string{"b.txt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
			e := newEnv(t)
			base := importRepo(t, e.store, up.dir)
			_, err := e.area.SeedFrom(base, nil)
			must(t, err)
			c.mine(e)
			if !c.unstaged {
				_, err := e.area.Stage(nil, "mine")
				must(t, err)
			}
			beforeChain, beforeStatus := e.area.Commits(), e.area.Status()
			moved := up.commit(c.theirs, c.remove)
			importRepo(t, e.store, up.dir)
			_, err = e.area.Rebase(moved)
			var ce *staging.ConflictError
			if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Paths, c.want) {
				t.Fatalf("rebase: %v, want a conflict on %v", err, c.want)
			}
			if !strings.Contains(err.Error(), "nothing was merged") {
				t.Errorf("message: %v", err)
			}
			if !reflect.DeepEqual(e.area.Commits(), beforeChain) || !reflect.DeepEqual(e.area.Status(), beforeStatus) || e.area.Base() != base {
				t.Error("a refused rebase changed the sandbox")
			}
		})
	}
}

// Target changes outside what was pulled go into the trees, not into the
// workspace.
func TestRebaseAfterPartialPull(t *testing.T) {
	up := newUpstream(t, map[string]string{"templates/t.md": "t\n", "src/x.go": "x\n"})
	e := newEnv(t)
	base := importRepo(t, e.store, up.dir)
	_, err := e.area.SeedFrom(base, []string{"templates/"})
	must(t, err)
	e.write(t, "templates/new.md", "n\n")
	_, err = e.area.Stage(nil, "new template")
	must(t, err)
	moved := up.commit(map[string]string{"src/x.go": "x2\n", "templates/t.md": "t2\n"}, nil)
	importRepo(t, e.store, up.dir)
	res, err := e.area.Rebase(moved)
	must(t, err)
	if !reflect.DeepEqual(res.Updated, []string{"templates/t.md"}) {
		t.Errorf("updated %v", res.Updated)
	}
	if _, err := e.ws.Stat("src/x.go"); err == nil {
		t.Error("a path never pulled was brought into the workspace")
	}
	tip := e.area.Commits()[0]
	repo := newRepo(t)
	export(t, e.store, repo, tip.ID)
	fsck(t, repo)
	if got := run(t, repo, "show", "main:src/x.go"); got != "x2\n" {
		t.Errorf("src/x.go in the rebased commit: %q", got)
	}
	if st := e.area.Status(); len(st.Unstaged) != 0 {
		t.Errorf("unstaged: %v", st.Unstaged)
	}
}

// A sandbox that never pulled pushing to an existing branch rebases onto
// it the same way.
func TestRebaseWithoutBase(t *testing.T) {
	up := newUpstream(t, map[string]string{"theirs.txt": "t\n"})
	e := newEnv(t)
	e.write(t, "mine.txt", "m\n")
	_, err := e.area.Stage(nil, "mine")
	must(t, err)
	head := importRepo(t, e.store, up.dir)
	_, err = e.area.Rebase(head)
	must(t, err)
	c := e.area.Commits()[0]
	if c.Parent != head {
		t.Fatalf("parent %s, want %s", c.Parent, head)
	}
	repo := newRepo(t)
	export(t, e.store, repo, c.ID)
	fsck(t, repo)
	if got := lsTree(t, repo, "main"); len(got) != 2 {
		t.Errorf("tree %v", got)
	}
	if _, err := e.ws.Stat("theirs.txt"); err == nil {
		t.Error("nothing was pulled, yet the target's file came into the workspace")
	}
	// A file of mine that the target also has is a conflict.
	e2 := newEnv(t)
	e2.write(t, "theirs.txt", "mine")
	_, err = e2.area.Stage(nil, "clash")
	must(t, err)
	importRepo(t, e2.store, up.dir)
	if _, err := e2.area.Rebase(head); !errors.Is(err, staging.ErrConflict) {
		t.Errorf("rebase over a file the target has: %v", err)
	}
}
