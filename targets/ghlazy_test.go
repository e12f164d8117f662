package targets_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"

	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/githubemu"
	"github.com/airlock-dev/airlock/targets/targettest"
)

// lazyRepo commits 300 text files of about 4 KiB, a link and a
// .gitattributes to the emulator's main, and returns them.
func lazyRepo(t *testing.T, insp *gitInspector) (map[string]targettest.File, int64) {
	t.Helper()
	files := map[string]targettest.File{}
	var blobBytes int64
	for i := 0; i < 300; i++ {
		// Text that compresses as source code does, about 3:1.
		var b strings.Builder
		for j := 0; b.Len() < 4000; j++ {
			fmt.Fprintf(&b, "line %d of file %d: %x\n", j, i, sha1.Sum([]byte{byte(i), byte(i >> 8), byte(j)}))
		}
		c := b.String()
		files[fmt.Sprintf("d%d/f%03d.txt", i%9, i)] = targettest.File{Data: c}
		blobBytes += int64(len(c))
	}
	files["link"] = targettest.File{Data: "d0/f000.txt", Symlink: true}
	files[".gitattributes"] = targettest.File{Data: "*.txt text\n"}
	insp.Commit(t, "main", files)
	return files, blobBytes
}

// What a pull of the emulated repository costs: requests and bytes.
func TestGitHubPullCost(t *testing.T) {
	ct := &countingTransport{}
	tgt, emu, insp, _ := emulated(t, targets.GitHubOptions{Transport: ct})
	_, blobBytes := lazyRepo(t, insp)
	sb := newSandbox(t, tgt)
	sb.pull(t, tgt, "refs/heads/main")
	t.Logf("pull: %d smart HTTP requests (%d info/refs, %d upload-pack), %d REST tree listings; %d bytes of smart HTTP answers, %d bytes of answers in all; the store holds %d bytes (blobs %d)",
		emu.Calls("GET", "/info/refs")+emu.Calls("POST", "/git-upload-pack"), emu.Calls("GET", "/info/refs"), emu.Calls("POST", "/git-upload-pack"),
		restTrees(emu), emu.GitBytes(), ct.bytes.Load(), sb.store.Bytes(), blobBytes)
	b := ct.bytes.Load()
	got, err := sb.ws.ReadFile("d3/f003.txt")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reading a %d-byte file: %d bytes of answer", len(got), ct.bytes.Load()-b)
}

// countingTransport counts the bytes of the answers' bodies.
type countingTransport struct{ bytes atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{resp.Body, &c.bytes}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// restTrees counts the REST listings of trees.
func restTrees(emu *githubemu.Server) int {
	return emu.CallsUnder("GET", "/git/trees/")
}

// A pull from GitHub brings the commit and its trees (a partial fetch,
// filter blob:none), the sizes from one listing of the tree, and only the
// blobs the tree check reads; a file's content is fetched by its id on
// first read, in one request.
func TestGitHubPullIsLazy(t *testing.T) {
	tgt, emu, insp, _ := emulated(t, targets.GitHubOptions{})
	files, blobBytes := lazyRepo(t, insp)
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	if held := sb.store.Bytes(); held > blobBytes/20 {
		t.Fatalf("after the pull the store holds %d bytes; the blobs are %d", held, blobBytes)
	}
	for p, f := range insp.Tree(t, head) {
		id := plumbing.ComputeHash(plumbing.BlobObject, []byte(f.Data))
		if special := f.Symlink || p == ".gitattributes"; sb.store.Holds(id) != special {
			t.Errorf("%s: held %v", p, sb.store.Holds(id))
		}
	}
	if n := restTrees(emu); n != 1 {
		t.Errorf("%d listings of trees, want 1", n)
	}
	if n := emu.Calls("POST", "/git-upload-pack"); n != 2 {
		t.Errorf("%d upload-pack requests for the pull, want 2 (the trees, the special blobs)", n)
	}
	refs, posts := emu.Calls("GET", "/info/refs"), emu.Calls("POST", "/git-upload-pack")
	fi, err := sb.ws.Stat("d3/f003.txt")
	if err != nil || fi.Size() != int64(len(files["d3/f003.txt"].Data)) {
		t.Fatalf("stat: %v %v", fi, err)
	}
	if n := emu.Calls("POST", "/git-upload-pack"); n != posts {
		t.Fatalf("a stat fetched: %d requests", n-posts)
	}
	got, err := sb.ws.ReadFile("d3/f003.txt")
	if err != nil || string(got) != files["d3/f003.txt"].Data {
		t.Fatalf("read: %v", err)
	}
	if n := emu.Calls("POST", "/git-upload-pack") - posts; n != 1 || emu.Calls("GET", "/info/refs") != refs {
		t.Fatalf("one read made %d upload-pack requests and %d advertisements, want 1 and 0", n, emu.Calls("GET", "/info/refs")-refs)
	}
	if _, err := sb.ws.ReadFile("d3/f003.txt"); err != nil || emu.Calls("POST", "/git-upload-pack")-posts != 1 {
		t.Fatalf("a second read fetched again (%v)", err)
	}
	if l, err := sb.ws.Readlink("link"); err != nil || l != "d0/f000.txt" {
		t.Fatalf("readlink: %q %v", l, err)
	}
	if sb.store.Holds(plumbing.ComputeHash(plumbing.BlobObject, got)) {
		t.Fatal("a read blob was copied into the store")
	}

	// Prefetch reads many in one request.
	var ids []plumbing.Hash
	for p, f := range files {
		if strings.HasPrefix(p, "d5/") {
			ids = append(ids, plumbing.ComputeHash(plumbing.BlobObject, []byte(f.Data)))
		}
	}
	posts = emu.Calls("POST", "/git-upload-pack")
	sb.store.Prefetch(ids, nil)
	if n := emu.Calls("POST", "/git-upload-pack") - posts; n != 1 {
		t.Fatalf("prefetching %d blobs made %d requests", len(ids), n)
	}
	for p, f := range files {
		if strings.HasPrefix(p, "d5/") {
			if got, err := sb.ws.ReadFile(p); err != nil || string(got) != f.Data {
				t.Fatalf("%s: %v", p, err)
			}
		}
	}
	if n := emu.Calls("POST", "/git-upload-pack") - posts; n != 1 {
		t.Fatalf("reading prefetched files made %d more requests", n-1)
	}

	// So does memfs.Prefetch, which a search or a run's mirror calls
	// on the workspace's entries, with the sizes the workspace knows.
	var es []memfs.Entry
	sb.ws.Snapshot().Walk(func(e memfs.Entry) error {
		if strings.HasPrefix(e.Path, "d6/") {
			es = append(es, e)
		}
		return nil
	})
	posts = emu.Calls("POST", "/git-upload-pack")
	memfs.Prefetch(es)
	for _, e := range es {
		if _, err := e.Content(); err != nil {
			t.Fatal(err)
		}
	}
	if n := emu.Calls("POST", "/git-upload-pack") - posts; n != 1 || len(es) < 30 {
		t.Fatalf("prefetching and reading %d entries made %d requests", len(es), n)
	}

	// A durable session resumed elsewhere reads through a source opened
	// anew by the target's id.
	src, err := targets.OpenSourceWith(context.Background(), tgt.ID(), targets.GitHubOptions{GitURL: emu.GitURL, APIURL: emu.URL, Token: emuToken})
	if err != nil {
		t.Fatal(err)
	}
	id := plumbing.ComputeHash(plumbing.BlobObject, []byte(files["d1/f001.txt"].Data))
	if data, err := src.ReadBlob(id, 1<<20); err != nil || string(data) != files["d1/f001.txt"].Data {
		t.Fatalf("the reopened source: %v", err)
	}
	if n, err := src.BlobSize(id); err != nil || n != int64(len(files["d1/f001.txt"].Data)) {
		t.Fatalf("the reopened source's size: %d %v", n, err)
	}
}

// wantSwapper answers wants of blob from with blob to: a server that
// sends something other than what was asked.
type wantSwapper struct {
	from, to plumbing.Hash
	swapped  atomic.Int32
}

func (w *wantSwapper) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/git-upload-pack") && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		if nb := bytes.ReplaceAll(body, []byte("want "+w.from.String()), []byte("want "+w.to.String())); !bytes.Equal(nb, body) {
			w.swapped.Add(1)
			body = nb
		}
		r = r.Clone(r.Context())
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A server answering a want with another blob is refused: the blob read
// must be the one asked for, whatever the answer holds.
func TestGitHubLazyReadRefusesAnotherBlob(t *testing.T) {
	sw := &wantSwapper{}
	tgt, _, insp, _ := emulated(t, targets.GitHubOptions{Transport: sw})
	files, _ := lazyRepo(t, insp)
	sw.from = plumbing.ComputeHash(plumbing.BlobObject, []byte(files["d1/f001.txt"].Data))
	sw.to = plumbing.ComputeHash(plumbing.BlobObject, []byte(files["d2/f002.txt"].Data))
	sb := newSandbox(t, tgt)
	sb.pull(t, tgt, "refs/heads/main")
	_, err := sb.ws.ReadFile("d1/f001.txt")
	if err == nil || !errors.Is(err, memfs.ErrUnavailable) || sw.swapped.Load() != 1 {
		t.Fatalf("a swapped blob was read: %v (swapped %d)", err, sw.swapped.Load())
	}
	t.Logf("refused: %v", err)
	if got, err := sb.ws.ReadFile("d2/f002.txt"); err != nil || string(got) != files["d2/f002.txt"].Data {
		t.Fatalf("the other file: %v", err)
	}
}

// A pull of a branch holding a huge blob does not fetch it; a server that
// answers a want of a small blob with the huge one is refused by the size
// the pack declares (the listed size is the bound) before it is inflated.
func TestGitHubFetchRefusesABlobByItsDeclaredSize(t *testing.T) {
	sw := &wantSwapper{}
	tgt, emu, insp, _ := emulated(t, targets.GitHubOptions{Transport: sw})
	insp.Commit(t, "init", map[string]targettest.File{"README.md": {Data: "# reports\n"}})
	dir := emu.Dir()
	const size = 96 << 20
	blob := strings.TrimSpace(run(t, dir, bytes.Repeat([]byte{0}, size), nil, "hash-object", "-w", "--stdin"))
	small := strings.TrimSpace(run(t, dir, []byte("small\n"), nil, "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(run(t, dir, []byte("100644 blob "+blob+"\tbomb.bin\n100644 blob "+small+"\tsmall.txt\n"), nil, "mktree"))
	commit := strings.TrimSpace(run(t, dir, nil, nil, "commit-tree", tree, "-m", "bomb"))
	run(t, dir, nil, nil, "update-ref", "refs/heads/bomb", commit)
	sw.from, sw.to = plumbing.NewHash(small), plumbing.NewHash(blob)
	store := staging.NewStore(16 << 20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	head, err := tgt.Fetch(context.Background(), "bomb", nil, store)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if store.Holds(plumbing.NewHash(blob)) || store.Bytes() > 1<<10 {
		t.Fatalf("the pull holds %d bytes", store.Bytes())
	}
	if n, err := store.BlobSize(plumbing.NewHash(blob)); err != nil || n != size {
		t.Fatalf("the listed size: %d %v", n, err)
	}
	_, err = store.LoadBlob(plumbing.NewHash(small))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, targets.ErrObjectTooLarge) || sw.swapped.Load() != 1 {
		t.Fatalf("reading the small blob answered with the huge one: %v", err)
	}
	n := after.TotalAlloc - before.TotalAlloc
	t.Logf("pulling %s and refusing a %d MiB blob for a 6-byte one allocated %d MiB: %v", shortid.Hash(head), size>>20, n>>20, err)
	if n > 64<<20 {
		t.Errorf("refusing a %d MiB blob allocated %d MiB", size>>20, n>>20)
	}
}

// Listings GitHub truncates are split by directory; a directory it cannot
// list whole makes the pull fetch the whole tip, as before it was lazy. A
// server that does not offer the filter gets the whole tip fetched too.
func TestGitHubPullFallbacks(t *testing.T) {
	t.Parallel() // long and independent: alongside the others, the package stays well within Go's default timeout
	tgt, emu, insp, _ := emulated(t, targets.GitHubOptions{})
	files, blobBytes := lazyRepo(t, insp)
	read := func(sb *sandbox) {
		t.Helper()
		for _, p := range []string{"d4/f004.txt", "link"} {
			if _, err := sb.ws.Lstat(p); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := sb.ws.ReadFile("d4/f004.txt"); err != nil || string(got) != files["d4/f004.txt"].Data {
			t.Fatalf("read: %v", err)
		}
	}

	emu.SetTreeLimit(40) // the root's listing (311 entries) is cut; each directory's (34) is not
	sb := newSandbox(t, tgt)
	sb.pull(t, tgt, "refs/heads/main")
	if n := restTrees(emu); n != 11 {
		t.Errorf("%d listings, want 11: the root recursively, the root alone, each of 9 directories", n)
	}
	if sb.store.Bytes() > blobBytes/20 {
		t.Errorf("split listings: the store holds %d bytes", sb.store.Bytes())
	}
	read(sb)

	emu.SetTreeLimit(20) // no directory can be listed whole
	sb = newSandbox(t, tgt)
	sb.pull(t, tgt, "refs/heads/main")
	if sb.store.Bytes() < blobBytes {
		t.Errorf("a tree GitHub cannot list: the store holds %d bytes, not every blob", sb.store.Bytes())
	}
	read(sb)

	emu.SetTreeLimit(0)
	run(t, emu.Dir(), nil, nil, "config", "uploadpack.allowFilter", "false")
	sb = newSandbox(t, tgt)
	sb.pull(t, tgt, "refs/heads/main")
	if sb.store.Bytes() < blobBytes {
		t.Errorf("no filter: the store holds %d bytes, not every blob", sb.store.Bytes())
	}
	read(sb)
}
