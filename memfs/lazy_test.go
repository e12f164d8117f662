package memfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
)

// blobs is a Loader over a map, counting the loads.
type blobs struct {
	mu    sync.Mutex
	m     map[[20]byte][]byte
	loads map[[20]byte]int
	fail  error
}

func newBlobs(contents ...string) (*blobs, map[string][20]byte) {
	b := &blobs{m: map[[20]byte][]byte{}, loads: map[[20]byte]int{}}
	ids := map[string][20]byte{}
	for _, c := range contents {
		id := plumbing.ComputeHash(plumbing.BlobObject, []byte(c))
		b.m[id], ids[c] = []byte(c), id
	}
	return b, ids
}

func (b *blobs) LoadBlob(id [20]byte) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return nil, b.fail
	}
	b.loads[id]++
	data, ok := b.m[id]
	if !ok {
		return nil, plumbing.ErrObjectNotFound
	}
	return data, nil
}

func (b *blobs) total() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.loads {
		n += c
	}
	return n
}

func lazySeed(t *testing.T, b *blobs, ids map[string][20]byte, files map[string]string) *memfs.Workspace {
	t.Helper()
	w := newWorkspace(t)
	var seed []memfs.SeedFile
	for p, c := range files {
		seed = append(seed, memfs.SeedFile{Path: p, Mode: 0o644, ID: ids[c], From: b, Size: int64(len(c))})
	}
	refused, err := w.Seed(seed)
	if err != nil || len(refused) > 0 {
		t.Fatalf("seed: %v %v", err, refused)
	}
	return w
}

// A lazy base costs nothing until a file is read: listing, stat, status,
// renames, chmod and checkpoints read nothing; a read loads that file
// once per read; a write makes an ordinary version of the loaded content.
func TestLazyFilesLoadOnRead(t *testing.T) {
	b, ids := newBlobs("alpha\n", "beta beta\n", "gamma\n")
	w := lazySeed(t, b, ids, map[string]string{"a.txt": "alpha\n", "d/b.txt": "beta beta\n", "d/e/c.txt": "gamma\n"})

	fi, err := w.Stat("d/b.txt")
	must(t, err)
	if fi.Size() != int64(len("beta beta\n")) {
		t.Fatalf("size %d", fi.Size())
	}
	if _, err := w.ReadDir("d"); err != nil {
		t.Fatal(err)
	}
	must(t, w.Rename("d/e/c.txt", "c.txt"))
	must(t, w.Chmod("a.txt", 0o755))
	if _, err := w.Checkpoint("one"); err != nil {
		t.Fatal(err)
	}
	if ch := w.Changes(); len(ch) != 3 {
		t.Fatalf("changes: %+v", ch)
	}
	live, held := w.Usage()
	if want := int64(len("alpha\n") + len("beta beta\n") + len("gamma\n")); live.Bytes != want || held.Bytes < want {
		t.Fatalf("usage live %+v held %+v, want %d bytes counted by size", live, held, want)
	}
	if n := b.total(); n != 0 {
		t.Fatalf("%d loads before any read", n)
	}

	got, err := w.ReadFile("c.txt")
	if err != nil || string(got) != "gamma\n" {
		t.Fatalf("read: %q %v", got, err)
	}
	f, err := w.OpenFile("d/b.txt", 0, 0)
	must(t, err)
	all, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(all) != "beta beta\n" {
		t.Fatalf("open+read: %q %v", all, err)
	}
	if b.loads[ids["alpha\n"]] != 0 {
		t.Fatal("a file never read was loaded")
	}

	// Appending through a handle makes a new version from the content.
	f, err = w.OpenFile("a.txt", 0x401 /* O_WRONLY|O_APPEND */, 0)
	must(t, err)
	if _, err := f.Write([]byte("more\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, _ = w.ReadFile("a.txt")
	if string(got) != "alpha\nmore\n" {
		t.Fatalf("after append: %q", got)
	}
	// Back to the checkpoint: the lazy version again, unchanged.
	if _, err := w.Rollback("one"); err != nil {
		t.Fatal(err)
	}
	got, _ = w.ReadFile("a.txt")
	if string(got) != "alpha\n" {
		t.Fatalf("after rollback: %q", got)
	}
	// The same content written by the worker is no change: ids compared,
	// the written side hashed.
	must(t, w.WriteFile("d/b.txt", []byte("beta beta\n"), 0))
	for _, c := range w.Changes() {
		if c.Path == "d/b.txt" {
			t.Fatalf("rewriting the same bytes shows as %v", c.Kind)
		}
	}
}

// A file whose content cannot be read says so, with the loader's reason
// (which says what to do: see staging's), and the workspace is unchanged.
func TestLazyLoadFailure(t *testing.T) {
	b, ids := newBlobs("alpha\n")
	w := lazySeed(t, b, ids, map[string]string{"a.txt": "alpha\n"})
	b.fail = errors.New("repository gone")
	_, err := w.ReadFile("a.txt")
	if !errors.Is(err, memfs.ErrUnavailable) || !strings.Contains(err.Error(), "repository gone") {
		t.Fatalf("read: %v", err)
	}
	err = w.Edit("a.txt", func(old []byte) ([]byte, error) { return append(old, 'x'), nil })
	if !errors.Is(err, memfs.ErrUnavailable) {
		t.Fatalf("edit: %v", err)
	}
	if len(w.Changes()) != 0 {
		t.Fatal("a failed edit changed the workspace")
	}
	e, ok := w.Snapshot().Lookup("a.txt")
	if !ok || !e.Lazy() {
		t.Fatal("the entry is not lazy")
	}
	if _, err := e.Content(); !errors.Is(err, memfs.ErrUnavailable) {
		t.Fatalf("content: %v", err)
	}
	b.fail = nil
	// A loader handing back other bytes than the size said is refused.
	b.m[ids["alpha\n"]] = []byte("alpha and more\n")
	if _, err := w.ReadFile("a.txt"); !errors.Is(err, memfs.ErrUnavailable) {
		t.Fatalf("short/long content: %v", err)
	}
}

// Only a regular file with a blob id can be lazy.
func TestLazySeedChecks(t *testing.T) {
	b, ids := newBlobs("x")
	w := newWorkspace(t)
	refused, err := w.Seed([]memfs.SeedFile{
		{Path: "noid", Mode: 0o644, From: b, Size: 1},
		{Path: "link", Mode: fs.ModeSymlink, ID: ids["x"], From: b, Size: 1},
		{Path: "big", Mode: 0o644, ID: ids["x"], From: b, Size: 1 << 40},
		{Path: "ok", Mode: 0o644, ID: ids["x"], From: b, Size: 1},
	})
	must(t, err)
	if len(refused) != 3 {
		t.Fatalf("refused %v", refused)
	}
	if !errors.Is(refused[2].Err, memfs.ErrQuotaExceeded) {
		t.Fatalf("a lazy file over the per-file limit: %v", refused[2].Err)
	}
}

// Lazy files survive DeltaOf and Apply (a durable session's journal)
// without being read, and Intern shares them.
func TestLazyDeltaApply(t *testing.T) {
	b, ids := newBlobs("alpha\n", "beta\n")
	w := lazySeed(t, b, ids, map[string]string{"a.txt": "alpha\n", "d/b.txt": "beta\n"})
	mustWrite(t, w, "new.txt", "new\n")
	s := w.Snapshot()
	ds := memfs.DeltaOf(nil, s)
	lazy := 0
	for _, d := range ds {
		if d.Lazy {
			lazy++
			if d.Data != nil || d.From == nil || d.Size == 0 {
				t.Fatalf("lazy delta %+v", d)
			}
		}
	}
	if lazy != 2 {
		t.Fatalf("%d lazy deltas", lazy)
	}
	into := newWorkspace(t)
	s2, err := into.Apply(nil, ds)
	must(t, err)
	s3, err := into.Apply(nil, ds)
	must(t, err)
	in := memfs.Intern(s2, s3)
	if got := memfs.DeltaOf(in[0], in[1]); len(got) != 0 {
		t.Fatalf("interned copies differ: %+v", got)
	}
	if b.total() != 0 {
		t.Fatal("writing down and rebuilding read content")
	}
	e, _ := in[0].Lookup("d/b.txt")
	if data, err := e.Content(); err != nil || string(data) != "beta\n" {
		t.Fatalf("rebuilt: %q %v", data, err)
	}
}

// A lazy file read through a handle in small chunks is loaded once, not
// once a chunk; a new version (a write) is read as itself.
func TestLazyFileReadInChunksLoadsOnce(t *testing.T) {
	content := strings.Repeat("chunked\n", 512)
	b, ids := newBlobs(content)
	w := lazySeed(t, b, ids, map[string]string{"big.txt": content})
	f, err := w.OpenFile("big.txt", os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	var got []byte
	buf := make([]byte, 7)
	for {
		n, err := f.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		must(t, err)
	}
	if string(got) != content || b.total() != 1 {
		t.Fatalf("read %d bytes (want %d) with %d loads", len(got), len(content), b.total())
	}
	if _, err := f.WriteAt([]byte("CHUNKED"), 0); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 8)
	if _, err := f.ReadAt(head, 0); err != nil || string(head) != "CHUNKED\n" {
		t.Fatalf("after a write: %q %v", head, err)
	}
}
