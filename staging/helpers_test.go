package staging_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
)

var testAuthor = staging.Signature{Name: "Report Writer", Email: "reports@example.com"}

// fixedClock ticks one second per call from a fixed instant, so commits
// are deterministic and ordered.
func fixedClock() func() time.Time {
	t := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

type env struct {
	ws    *memfs.Workspace
	store *staging.Store
	area  *staging.Area
}

func newEnv(t testing.TB, opts ...memfs.Option) *env {
	t.Helper()
	ws, err := memfs.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	store := staging.NewStore(0)
	area, err := staging.New(ws, store, staging.Config{Author: testAuthor, Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	return &env{ws, store, area}
}

func (e *env) write(t testing.TB, name, content string) {
	t.Helper()
	if err := e.ws.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func needGit(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	return p
}

// gitEnv isolates git from the machine's configuration.
func gitEnv(extra ...string) []string {
	return append(os.Environ(), append([]string{
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "TZ=UTC",
	}, extra...)...)
}

// run runs git in dir and returns its standard output.
func run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gitWith(t, dir, nil, args...)
}

func gitWith(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(needGit(t), args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// newRepo makes an empty repository in a temp dir.
func newRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main", ".")
	return dir
}

// export copies every object of the store into the repository at dir and
// points refs/heads/main at commit.
func export(t testing.TB, store *staging.Store, dir string, commit plumbing.Hash) {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	iter, err := store.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	err = iter.ForEach(func(o plumbing.EncodedObject) error {
		_, err := repo.Storer.SetEncodedObject(o)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, "update-ref", "refs/heads/main", commit.String())
}

// importRepo copies every object of the repository at dir into the store
// and returns the commit refs/heads/main points at.
func importRepo(t testing.TB, store *staging.Store, dir string) plumbing.Hash {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	iter, err := repo.Storer.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	err = iter.ForEach(func(o plumbing.EncodedObject) error {
		r, err := o.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		m := &plumbing.MemoryObject{}
		m.SetType(o.Type())
		if _, err := io.Copy(m, r); err != nil {
			return err
		}
		_, err = store.SetEncodedObject(m)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(run(t, dir, "rev-parse", "refs/heads/main"))
	return plumbing.NewHash(head)
}

// writeDisk writes files into dir (path -> content; a "->" prefix makes a
// symlink, a "*" suffix on the path an executable).
func writeDisk(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		exe := strings.HasSuffix(p, "*")
		p = strings.TrimSuffix(p, "*")
		full := filepath.Join(dir, p)
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		if target, ok := strings.CutPrefix(content, "->"); ok {
			must(t, os.Symlink(target, full))
			continue
		}
		mode := os.FileMode(0o644)
		if exe {
			mode = 0o755
		}
		must(t, os.WriteFile(full, []byte(content), mode))
		must(t, os.Chmod(full, mode))
	}
}

// lsTree is `git ls-tree -r` of a commit as "mode hash path" lines.
func lsTree(t testing.TB, dir, rev string) []string {
	t.Helper()
	out := strings.Split(strings.TrimSpace(run(t, dir, "ls-tree", "-r", "--full-tree", rev)), "\n")
	if len(out) == 1 && out[0] == "" {
		return nil
	}
	for i, l := range out {
		mode, rest, _ := strings.Cut(l, " ")
		_, rest, _ = strings.Cut(rest, " ")
		out[i] = mode + " " + rest
	}
	sort.Strings(out)
	return out
}

func fsck(t testing.TB, dir string) {
	t.Helper()
	cmd := exec.Command(needGit(t), "fsck", "--strict", "--no-dangling")
	cmd.Dir = dir
	cmd.Env = gitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
}

func fileList(c *staging.Commit) []string {
	var out []string
	for _, f := range c.Files {
		out = append(out, fmt.Sprintf("%s %s %o", f.Op, f.Path, f.Mode))
	}
	return out
}
