package targets_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/targets"
)

// commitFiles writes files into the working tree of dir and commits them.
// trySeed pulls the main branch of the bare repository dir into a new
// sandbox, returning what the pull refused and its error.
func trySeed(t *testing.T, dir string) (*sandbox, []memfs.Refused, error) {
	t.Helper()
	tgt, err := targets.OpenLocalBare(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	sb := newSandbox(t, tgt)
	head, err := tgt.Fetch(context.Background(), "refs/heads/main", nil, sb.store)
	if err != nil {
		return sb, nil, err
	}
	refused, err := sb.area.SeedFrom(head, nil)
	return sb, refused, err
}

// zeroReader reads zeros without end.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func commitFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	writeFiles(t, dir, files)
	run(t, dir, nil, nil, "add", "-A")
	run(t, dir, nil, nil, "commit", "-qm", "c")
}

// The repository a base came from is the user's: git gc runs there
// (by hand, or on its own after a commit) while the session lives. Loose
// objects the pull saw are packed and removed, a pack the source had
// indexed is replaced by another: every lazy file still reads, because
// the objects are all still there.
func TestLazyBaseSurvivesGCOfItsRepository(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	files := map[string]string{}
	for i := 0; i < 6; i++ {
		files[fmt.Sprintf("f%d.txt", i)] = strings.Repeat(fmt.Sprintf("file %d\n", i), 20)
	}
	commitFiles(t, dir, files)
	sb := pulled(t, dir, false)
	read := func(p string) {
		t.Helper()
		got, err := sb.ws.ReadFile(p)
		if err != nil || string(got) != files[p] {
			t.Fatalf("read %s: %q %v", p, got, err)
		}
	}
	read("f0.txt") // the source's storages have looked at the objects
	// Loose objects packed, then removed.
	run(t, dir, nil, nil, "gc", "-q", "--prune=now")
	read("f1.txt")
	read("f2.txt")
	// The pack replaced by another one.
	commitFiles(t, dir, map[string]string{"other.txt": "more\n"})
	run(t, dir, nil, nil, "repack", "-adq")
	run(t, dir, nil, nil, "prune", "--expire=now")
	read("f3.txt")
	read("f4.txt")
	read("f5.txt")
}

// A tree naming a blob the repository does not have (a shallow or
// partial clone, a hand-made tree) makes the pull fail and name the
// blob: a lazy file that could never be read is not seeded.
func TestPullOfATreeWithAMissingBlob(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
	ok := strings.TrimSpace(run(t, dir, []byte("here\n"), nil, "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(run(t, dir, []byte("100644 blob "+ok+"\there.txt\n100644 blob 1111111111111111111111111111111111111111\tmissing.txt\n"), nil, "mktree", "--missing"))
	mainAt(t, dir, tree)
	_, _, err := trySeed(t, dir)
	if err == nil || !strings.Contains(err.Error(), "1111111") {
		t.Fatalf("pull of a tree with a missing blob: %v", err)
	}
}

// A blob larger than the workspace takes is refused when seeded, from
// its size alone: it is never read.
func TestPullOfABlobOverTheFileLimit(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
	big := strings.TrimSpace(run(t, dir, bytes.Repeat([]byte("x"), 1<<20), nil, "hash-object", "-w", "--stdin"))
	small := strings.TrimSpace(run(t, dir, []byte("small\n"), nil, "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(run(t, dir, []byte("100644 blob "+big+"\tbig.bin\n100644 blob "+small+"\tsmall.txt\n"), nil, "mktree"))
	mainAt(t, dir, tree)
	tgt, err := targets.OpenLocalBare(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	ws, err := memfs.New(memfs.WithLimits(memfs.Limits{MaxFileBytes: 1 << 16}))
	if err != nil {
		t.Fatal(err)
	}
	store := staging.NewStore(1 << 30)
	area, err := staging.New(ws, store, staging.Config{Author: staging.Signature{Name: "W", Email: "w@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	head, err := tgt.Fetch(context.Background(), "refs/heads/main", nil, store)
	if err != nil {
		t.Fatal(err)
	}
	refused, err := area.SeedFrom(head, nil)
	if err != nil || len(refused) != 1 || refused[0].Path != "big.bin" || !errors.Is(refused[0].Err, memfs.ErrQuotaExceeded) {
		t.Fatalf("seed: %v %v", refused, err)
	}
	if n := store.CachedBytes(); n != 0 {
		t.Fatalf("%d bytes read to refuse a blob by its size", n)
	}
	if got, err := ws.ReadFile("small.txt"); err != nil || string(got) != "small\n" {
		t.Fatalf("small: %q %v", got, err)
	}
}

// Names the listing must take byte for byte: newlines, tabs, quotes,
// backslashes, bytes that are not UTF-8, a deep path. Every file the
// workspace takes has git's bytes, and what it refuses it names.
func TestPullOfOddNames(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
	names := []string{"new\nline", "tab\there", "\"quoted\"", "back\\slash", "caf\xe9", "sp ace", strings.Repeat("d/", 60) + "deep"}
	blobs := map[string]string{}
	for i, n := range names {
		name := n
		if !strings.Contains(n, "/") {
			// As the shell would write it: the bytes, not the escapes.
			name = strings.NewReplacer("\\n", "\n", "\\t", "\t", "\\\"", "\"", "\\\\", "\\", "\\xe9", "\xe9").Replace(n)
		}
		c := fmt.Sprintf("content %d\n", i)
		blobs[name] = c
	}
	var idx bytes.Buffer
	for name, c := range blobs {
		id := strings.TrimSpace(run(t, dir, []byte(c), nil, "hash-object", "-w", "--stdin"))
		fmt.Fprintf(&idx, "100644 %s 0\t%s\x00", id, name)
	}
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	run(t, dir, idx.Bytes(), env, "update-index", "--add", "-z", "--index-info")
	tree := strings.TrimSpace(run(t, dir, nil, env, "write-tree"))
	mainAt(t, dir, tree)
	sb, refused, err := trySeed(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range refused {
		out[r.Path] = true
	}
	taken := 0
	for name, c := range blobs {
		got, err := sb.ws.ReadFile(name)
		switch {
		case out[name]:
		case err != nil || string(got) != c:
			t.Fatalf("%q: %q %v", name, got, err)
		default:
			taken++
		}
	}
	if taken+len(out) != len(blobs) || taken < 3 {
		t.Fatalf("%d taken, refused %v", taken, refused)
	}
}

// A moved lazy file whose repository vanished before the push to another
// one: the push fails, says why, and nothing lands there.
func TestLazyBlobGoneBeforeAPushElsewhere(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	run(t, filepath.Dir(src), nil, nil, "init", "-q", "-b", "main", src)
	commitFiles(t, src, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	sb := pulled(t, src, false)
	if err := sb.ws.Rename("b.txt", "moved.txt"); err != nil {
		t.Fatal(err)
	}
	c, err := sb.area.Stage(nil, "move")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	dst, to := emptyBare(t)
	sb.gate = newSandbox(t, to).gate
	_, err = sb.pushCommit(t, to, "refs/heads/main", plumbing.ZeroHash, c.ID, c.Tree)
	// Found missing before git-receive-pack was started, not halfway
	// through the pack; the worker is told what to do.
	if err == nil || !strings.Contains(err.Error(), "git_pull") || strings.Contains(err.Error(), "receive-pack") {
		t.Fatalf("a push of a blob nobody has: %v", err)
	}
	if refs := run(t, dst, nil, nil, "for-each-ref"); refs != "" {
		t.Fatalf("refs landed: %s", refs)
	}
	if objs := run(t, dst, nil, nil, "count-objects"); !strings.HasPrefix(objs, "0 objects") {
		t.Fatalf("objects landed: %s", objs)
	}
}

// A repository that borrows its objects (git clone --shared: an
// objects/info/alternates file) is read as git reads it: a lazy base's
// blobs come from the other repository, also when the trees had to be
// copied one by one (a tree git lists leniently), and a push elsewhere
// carries them.
func TestLazyBaseOfASharedClone(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	run(t, filepath.Dir(src), nil, nil, "init", "-q", "-b", "main", src)
	commitFiles(t, src, map[string]string{"a.txt": "a\n", "b/c.txt": "c\n"})
	// A tree with a deprecated mode, which makes the pull copy trees.
	blob := strings.TrimSpace(run(t, src, []byte("odd mode\n"), nil, "hash-object", "-w", "--stdin"))
	tree := lenientTree(t, filepath.Join(src, ".git", "objects"), blob)
	odd := strings.TrimSpace(run(t, src, nil, nil, "commit-tree", tree, "-m", "odd"))
	run(t, src, nil, nil, "update-ref", "refs/heads/odd", odd)
	clone := filepath.Join(t.TempDir(), "clone")
	run(t, filepath.Dir(clone), nil, nil, "clone", "-q", "--shared", "--bare", src, clone)
	if objs := run(t, clone, nil, nil, "count-objects"); !strings.HasPrefix(objs, "0 objects") {
		t.Fatalf("the clone has objects of its own: %s", objs)
	}
	tgt, err := targets.OpenLocalBare(context.Background(), clone)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	for _, branch := range []string{"main", "odd"} {
		sb := newSandbox(t, tgt)
		sb.pull(t, tgt, "refs/heads/"+branch)
		if branch == "odd" {
			if got, err := sb.ws.ReadFile("odd.txt"); err != nil || string(got) != "odd mode\n" {
				t.Fatalf("odd: %q %v", got, err)
			}
			continue
		}
		if got, err := sb.ws.ReadFile("a.txt"); err != nil || string(got) != "a\n" {
			t.Fatalf("a: %q %v", got, err)
		}
		if err := sb.ws.Rename("b/c.txt", "moved.txt"); err != nil {
			t.Fatal(err)
		}
		c, err := sb.area.Stage(nil, "move")
		if err != nil {
			t.Fatal(err)
		}
		dst, to := emptyBare(t)
		sb.gate = newSandbox(t, to).gate
		if _, err := sb.pushCommit(t, to, "refs/heads/main", plumbing.ZeroHash, c.ID, c.Tree); err != nil {
			t.Fatal(err)
		}
		if got := run(t, dst, nil, nil, "cat-file", "-p", "main:moved.txt"); got != "c\n" {
			t.Fatalf("pushed: %q", got)
		}
	}
}

// A loose object whose header says less than its body holds (a zlib
// bomb under a file's id) is read no further than its header says: the
// read fails, and memory does not follow what the body inflates to.
func TestLazyLooseObjectLargerThanItsHeader(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	commitFiles(t, dir, map[string]string{"a.txt": "good!\n", "b.txt": "fine\n"})
	id := strings.TrimSpace(run(t, dir, nil, nil, "rev-parse", "HEAD:a.txt"))
	noCheckout(t, dir, "a.txt")
	sb := pulled(t, dir, false)
	// Zeros: they inflate from next to nothing.
	writeLoose(t, filepath.Join(dir, ".git", "objects"), id, io.MultiReader(strings.NewReader("blob 6\x00good!\n"), io.LimitReader(zeroReader{}, 128<<20)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := sb.ws.ReadFile("a.txt")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, memfs.ErrUnavailable) {
		t.Fatalf("reading a bomb: %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
		t.Fatalf("reading a 6-byte blob allocated %d MiB", n>>20)
	}
	if got, err := sb.ws.ReadFile("b.txt"); err != nil || string(got) != "fine\n" {
		t.Fatalf("b: %q %v", got, err)
	}
}

// Large blobs stored as deltas in a pack (streamed, past the threshold
// at which go-git stops holding objects whole) read back intact.
func TestLazyPackedDeltas(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	var big strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&big, "line %d of a file large enough to stream\n", i)
	}
	v1 := big.String()
	commitFiles(t, dir, map[string]string{"big.txt": v1, "copy.txt": v1 + "tail\n"})
	v2 := strings.Replace(v1, "line 2500 ", "LINE 2500 ", 1)
	commitFiles(t, dir, map[string]string{"big.txt": v2})
	run(t, dir, nil, nil, "repack", "-adfq")
	for _, rev := range []string{"HEAD~1", "HEAD"} {
		run(t, dir, nil, nil, "update-ref", "refs/heads/at", rev)
		tgt, err := targets.OpenLocal(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		sb := newSandbox(t, tgt)
		sb.pull(t, tgt, "refs/heads/at")
		for _, p := range []string{"big.txt", "copy.txt"} {
			want := run(t, dir, nil, nil, "cat-file", "blob", rev+":"+p)
			if got, err := sb.ws.ReadFile(p); err != nil || string(got) != want {
				t.Fatalf("%s:%s: %d bytes, %v", rev, p, len(got), err)
			}
		}
		tgt.Close()
	}
}

// A loose object swapped, after the pull, for one whose header declares
// a terabyte under a lazy file's id: the read is refused from the header,
// nothing is allocated for it.
func TestLazyLooseObjectWithAHugeHeader(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	commitFiles(t, dir, map[string]string{"a.txt": "good!\n"})
	id := strings.TrimSpace(run(t, dir, nil, nil, "rev-parse", "HEAD:a.txt"))
	noCheckout(t, dir, "a.txt")
	for _, resumed := range []bool{false, true} {
		tgt, err := targets.OpenLocal(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		sb := newSandbox(t, tgt)
		sb.pull(t, tgt, "refs/heads/main")
		obj := filepath.Join(dir, ".git", "objects", id[:2], id[2:])
		good, _ := os.ReadFile(obj)
		writeLoose(t, filepath.Join(dir, ".git", "objects"), id, strings.NewReader("blob 1099511627776\x00good!\n"))
		if resumed {
			// As a resumed session reads it: a source that listed nothing.
			src, err := targets.OpenSource(context.Background(), tgt.ID())
			if err != nil {
				t.Fatal(err)
			}
			sb.store.AddSource(tgt.ID(), src)
		}
		if _, err := sb.ws.ReadFile("a.txt"); !errors.Is(err, memfs.ErrUnavailable) || !strings.Contains(err.Error(), "declares") {
			t.Fatalf("resumed %v: reading a blob with a huge header: %v", resumed, err)
		}
		os.WriteFile(obj, good, 0o644)
		tgt.Close()
	}
}

// A moved lazy file pushed back to the repository it came from: the
// pack need not carry it, and the branch gets it. Then the user
// force-pushes the base away and prunes: the next push of the sandbox's
// work is refused cleanly (the branch moved), and a push of it as a new
// branch, which would need the pruned blob, fails before anything lands.
func TestLazyBlobPushedBackAndOrphaned(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
	(&gitInspector{dir: dir}).Commit(t, "main", toFiles(map[string]string{"a.txt": "a\n", "b/c.txt": "orphaned soon\n"}))
	tgt, err := targets.OpenLocalBare(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb := newSandbox(t, tgt)
	base := sb.pull(t, tgt, "refs/heads/main")
	if err := sb.ws.Rename("b/c.txt", "moved.txt"); err != nil {
		t.Fatal(err)
	}
	c1, err := sb.push(t, tgt, "refs/heads/main", base)
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, dir, nil, nil, "cat-file", "-p", "main:moved.txt"); got != "orphaned soon\n" {
		t.Fatalf("pushed back: %q", got)
	}
	if n := sb.store.CachedBytes(); n != 0 {
		t.Fatalf("a push to the same repository read %d bytes", n)
	}
	// The user rewrites history: the blob is reachable from nothing, and
	// pruned.
	(&gitInspector{dir: dir}).Commit(t, "other", toFiles(map[string]string{"x.txt": "x\n"}))
	other := strings.TrimSpace(run(t, dir, nil, nil, "rev-parse", "refs/heads/other"))
	run(t, dir, nil, nil, "update-ref", "refs/heads/main", other)
	run(t, dir, nil, nil, "branch", "-D", "other")
	run(t, dir, nil, nil, "reflog", "expire", "--expire=now", "--all")
	run(t, dir, nil, nil, "gc", "-q", "--prune=now")
	if err := sb.ws.WriteFile("more.txt", []byte("more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c2, err := sb.area.Stage(nil, "more")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.pushCommit(t, tgt, "refs/heads/main", c1, c2.ID, c2.Tree); err == nil {
		t.Fatal("a push over a branch that moved went through")
	}
	_, err = sb.pushCommit(t, tgt, "refs/heads/new", plumbing.ZeroHash, c2.ID, c2.Tree)
	if err == nil || !strings.Contains(err.Error(), "git_pull") {
		t.Fatalf("a push needing a pruned blob: %v", err)
	}
	if refs := run(t, dir, nil, nil, "for-each-ref", "refs/heads/new"); refs != "" {
		t.Fatalf("landed: %s", refs)
	}
}
