package targets

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/internal/gitenv"
	"github.com/airlock-dev/airlock/targets/internal/transfer"
)

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A small repository holding one blob that inflates to far more than the
// sandbox may hold: a pull reads its size from its header and the
// workspace refuses the file by that size; it is never inflated. (A
// GitHub fetch copies blobs, and refuses it by its declared size before
// inflating: copyCommit, below.)
func TestPullRefusesABlobByItsDeclaredSize(t *testing.T) {
	dir := t.TempDir()
	git := func(stdin io.Reader, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, gitenv.Clean(), stdin
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(nil, "init", "-q", "-b", "main", ".")
	const size = 96 << 20
	blob := git(io.LimitReader(zeros{}, size), "hash-object", "-w", "--stdin")
	tree := git(strings.NewReader("100644 blob "+blob+"\tbomb.bin\n100644 blob "+emptyBlob(t, git)+"\tok.txt\n"), "mktree")
	commit := git(nil, "-c", "user.name=x", "-c", "user.email=x@x", "commit-tree", tree, "-m", "bomb")
	git(nil, "update-ref", "refs/heads/main", commit)

	for _, packed := range []bool{false, true} {
		if packed {
			git(nil, "repack", "-adq")
		}
		l, err := OpenLocal(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		store := staging.NewStore(16 << 20)
		ws, err := memfs.New(memfs.WithLimits(memfs.Limits{MaxFileBytes: 16 << 20}))
		if err != nil {
			t.Fatal(err)
		}
		area, err := staging.New(ws, store, staging.Config{Author: staging.Signature{Name: "W", Email: "w@example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		var refused []memfs.Refused
		var ferr error
		n := allocated(func() {
			var head plumbing.Hash
			if head, ferr = l.Fetch(context.Background(), "refs/heads/main", nil, store); ferr == nil {
				refused, ferr = area.SeedFrom(head, nil)
			}
		})
		if ferr != nil || len(refused) != 1 || refused[0].Path != "bomb.bin" || !errors.Is(refused[0].Err, memfs.ErrQuotaExceeded) {
			t.Fatalf("packed=%v: pull: %v, refused %v", packed, ferr, refused)
		}
		if _, err := ws.ReadFile("ok.txt"); err != nil {
			t.Fatalf("packed=%v: the other file: %v", packed, err)
		}
		t.Logf("packed=%v: refusing a %d MiB blob allocated %d KiB", packed, size>>20, n>>10)
		if n > 64<<20 {
			t.Errorf("packed=%v: refusing a %d MiB blob allocated %d MiB", packed, size>>20, n>>20)
		}
		l.Close()
	}
}

func emptyBlob(t *testing.T, git func(io.Reader, ...string) string) string {
	return git(strings.NewReader(""), "hash-object", "-w", "--stdin")
}

// copyCommit with blobs (a GitHub fetch) refuses a blob by its declared
// size before inflating it.
func TestCopyRefusesABlobByItsDeclaredSize(t *testing.T) {
	src := memory.NewStorage()
	o := src.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	w, _ := o.Writer()
	io.Copy(w, io.LimitReader(zeros{}, 32<<20))
	w.Close()
	bh, _ := src.SetEncodedObject(o)
	tr := &object.Tree{Entries: []object.TreeEntry{{Name: "bomb.bin", Mode: filemode.Regular, Hash: bh}}}
	to := src.NewEncodedObject()
	tr.Encode(to)
	th, _ := src.SetEncodedObject(to)
	c := &object.Commit{TreeHash: th, Message: "bomb"}
	co := src.NewEncodedObject()
	c.Encode(co)
	ch, _ := src.SetEncodedObject(co)
	err := transfer.CopyCommit(context.Background(), src, ch, nil, true, staging.NewStore(16<<20))
	if !errors.Is(err, ErrObjectTooLarge) || !strings.Contains(err.Error(), "bomb.bin") {
		t.Fatalf("copyCommit: %v", err)
	}
}

// A tree nested 40,000 directories deep costs what one path at the length
// limit costs, not memory quadratic in its depth.
func TestFetchOfADeepTreeIsBounded(t *testing.T) {
	src := memory.NewStorage()
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		m := src.NewEncodedObject()
		if err := o.Encode(m); err != nil {
			t.Fatal(err)
		}
		h, err := src.SetEncodedObject(m)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	b := src.NewEncodedObject()
	b.SetType(plumbing.BlobObject)
	w, _ := b.Writer()
	w.Write([]byte("x"))
	w.Close()
	bh, _ := src.SetEncodedObject(b)
	tree := put(&object.Tree{Entries: []object.TreeEntry{{Name: "f", Mode: filemode.Regular, Hash: bh}}})
	for i := 0; i < 40000; i++ {
		tree = put(&object.Tree{Entries: []object.TreeEntry{{Name: "d", Mode: filemode.Dir, Hash: tree}}})
	}
	commit := put(&object.Commit{TreeHash: tree, Message: "deep",
		Author: object.Signature{Name: "x", Email: "x@x"}, Committer: object.Signature{Name: "x", Email: "x@x"}})
	store := staging.NewStore(0)
	var err error
	n := allocated(func() { err = transfer.CopyCommit(context.Background(), src, commit, nil, true, store) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fetching a tree 40,000 deep allocated %d MiB", n>>20)
	if n > 64<<20 {
		t.Errorf("fetching a tree 40,000 deep allocated %d MiB", n>>20)
	}
	var dropped []staging.Refusal
	n = allocated(func() { _, dropped, err = staging.CleanTree(store, tree) })
	if err != nil || len(dropped) != 1 {
		t.Fatalf("CleanTree: %v %v", dropped, err)
	}
	if n > 64<<20 {
		t.Errorf("judging it allocated %d MiB", n>>20)
	}
}
