package targets_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// sandbox is a worker's side for these tests.
type sandbox struct {
	ws    *memfs.Workspace
	store *staging.Store
	area  *staging.Area
	gate  *approval.Gate
}

func newSandbox(t testing.TB, target targets.Target) *sandbox {
	t.Helper()
	ws, err := memfs.New(memfs.WithLimits(memfs.Limits{MaxTotalBytes: 2 << 30}))
	if err != nil {
		t.Fatal(err)
	}
	store := staging.NewStore(4 << 30)
	area, err := staging.New(ws, store, staging.Config{Author: staging.Signature{Name: "W", Email: "w@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &sandbox{ws, store, area, approval.NewGate(l, approval.Policy{AutoApprove: []string{target.ID()}})}
}

func (sb *sandbox) pull(t testing.TB, target targets.Target, ref string) plumbing.Hash {
	t.Helper()
	head, err := target.Fetch(context.Background(), ref, nil, sb.store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.area.SeedFrom(head, nil); err != nil {
		t.Fatal(err)
	}
	return head
}

// push stages everything and pushes it over old.
func (sb *sandbox) push(t testing.TB, target targets.Target, ref string, old plumbing.Hash) (plumbing.Hash, error) {
	t.Helper()
	c, err := sb.area.Stage(nil, "change")
	if err != nil {
		t.Fatal(err)
	}
	return sb.pushCommit(t, target, ref, old, c.ID, c.Tree)
}

// pushCommit gets an approval for commit id and pushes it over old.
func (sb *sandbox) pushCommit(t testing.TB, target targets.Target, ref string, old, id, tree plumbing.Hash) (plumbing.Hash, error) {
	t.Helper()
	tk, err := sb.gate.Submit(&approval.Request{Worker: "w", Target: target.ID(), Ref: ref, Old: old, New: id, Tree: tree}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, g, err := tk.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id, target.Push(ctx, g, sb.store)
}

// A push to a checked-out branch never loses an uncommitted change: when
// one of the paths it changes is modified, staged, untracked or ignored
// in the working tree, it is refused and names them; otherwise it goes
// ahead and leaves every other uncommitted change alone.
func TestCheckedOutBranchNeverLosesWork(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	writeFiles(t, dir, map[string]string{
		"a.txt": "a\n", "b.txt": "b\n", "staged.txt": "s\n", ".gitignore": "build/\n", "keep/k.txt": "k\n",
	})
	run(t, dir, nil, nil, "add", "-A")
	run(t, dir, nil, nil, "commit", "-qm", "base")
	// The user's work in progress:
	writeFiles(t, dir, map[string]string{
		"a.txt": "a: my unsaved edit\n", "untracked.txt": "mine\n", "build/out.bin": "ignored\n", "staged.txt": "s: staged edit\n",
	})
	run(t, dir, nil, nil, "add", "staged.txt")
	before := worktreeFiles(t, dir)
	statusBefore := run(t, dir, nil, nil, "status", "--porcelain", "--ignored")

	tgt, err := targets.OpenLocal(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		files map[string]string
		dirty []string
	}{
		{"modified file", map[string]string{"a.txt": "a2\n"}, []string{"a.txt"}},
		{"staged file", map[string]string{"staged.txt": "s2\n"}, []string{"staged.txt"}},
		{"untracked file in the way", map[string]string{"untracked.txt": "theirs\n"}, []string{"untracked.txt"}},
		{"ignored file in the way", map[string]string{"build/out.bin": "x\n"}, []string{"build/"}},
		{"untracked file where a directory goes", map[string]string{"untracked.txt/inner": "x\n"}, []string{"untracked.txt"}},
		{"several", map[string]string{"a.txt": "a2\n", "b.txt": "b2\n", "untracked.txt": "z"}, []string{"a.txt", "untracked.txt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := newSandbox(t, tgt)
			head := sb.pull(t, tgt, "refs/heads/main")
			for p, content := range c.files {
				if err := sb.ws.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Named, so that a file .gitignore excludes is staged
			// too (as git add -f).
			var paths []string
			for p := range c.files {
				paths = append(paths, p)
			}
			cm, err := sb.area.Stage(paths, "change")
			if err != nil {
				t.Fatal(err)
			}
			_, err = sb.pushCommit(t, tgt, "refs/heads/main", head, cm.ID, cm.Tree)
			var de *targets.DirtyError
			if !errors.As(err, &de) || !reflect.DeepEqual(de.Paths, c.dirty) {
				t.Fatalf("push: %v, want a refusal naming %v", err, c.dirty)
			}
			if got := worktreeFiles(t, dir); !reflect.DeepEqual(got, before) {
				t.Error("a refused push changed the working tree")
			}
			if got := run(t, dir, nil, nil, "rev-parse", "main"); strings.TrimSpace(got) != head.String() {
				t.Error("a refused push moved the branch")
			}
		})
	}
	// A push that only touches clean paths goes through and leaves the
	// user's work in progress exactly as it was.
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	sb.ws.WriteFile("b.txt", []byte("b from the worker\n"), 0o644)
	sb.ws.WriteFile("new/dir/file.txt", []byte("new\n"), 0o644)
	sb.ws.RemoveAll("keep")
	if _, err := sb.push(t, tgt, "refs/heads/main", head); err != nil {
		t.Fatal(err)
	}
	after := worktreeFiles(t, dir)
	for _, p := range []string{"a.txt", "untracked.txt", "build/out.bin", "staged.txt"} {
		if after[p] != before[p] {
			t.Errorf("%s changed: %+v, was %+v", p, after[p], before[p])
		}
	}
	if after["b.txt"].Data != "b from the worker\n" || after["new/dir/file.txt"].Data != "new\n" {
		t.Errorf("the pushed files are not in the working tree: %+v", after)
	}
	if _, ok := after["keep/k.txt"]; ok {
		t.Error("a file the push deleted is still there")
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); !os.IsNotExist(err) {
		t.Error("the emptied directory keep/ is still there")
	}
	if got := run(t, dir, nil, nil, "status", "--porcelain", "--ignored"); got != statusBefore {
		t.Errorf("git status changed beyond the pushed paths:\nbefore:\n%s\nafter:\n%s", statusBefore, got)
	}
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
