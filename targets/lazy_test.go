package targets_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/targettest"
)

// mainAt points dir's main branch at a new commit of tree.
func mainAt(t *testing.T, dir, tree string) string {
	t.Helper()
	commit := strings.TrimSpace(run(t, dir, nil, []string{"GIT_AUTHOR_NAME=x", "GIT_AUTHOR_EMAIL=x@x", "GIT_COMMITTER_NAME=x", "GIT_COMMITTER_EMAIL=x@x"}, "commit-tree", tree, "-m", "m"))
	run(t, dir, nil, nil, "update-ref", "refs/heads/main", commit)
	return commit
}

// emptyBare makes an empty bare repository and opens it as a target.
func emptyBare(t *testing.T) (string, *targets.Local) {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
	tgt, err := targets.OpenLocalBare(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	return dir, tgt
}

// writeLoose writes raw (an object's header and content, as git hashes
// them, or whatever a hostile repository holds) zlib'd as the loose object
// id under objects, over what is there.
func writeLoose(t *testing.T, objects, id string, raw io.Reader) {
	t.Helper()
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	io.Copy(zw, raw)
	zw.Close()
	p := filepath.Join(objects, id[:2], id[2:])
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
}

// lenientTree writes, under objects, a tree holding blob (hex) as
// odd.txt with the deprecated mode 100664, which git lists as 100644: the
// listing cannot rebuild it. It returns the tree's id.
func lenientTree(t *testing.T, objects, blob string) string {
	t.Helper()
	id, _ := hex.DecodeString(blob)
	content := append([]byte("100664 odd.txt\x00"), id...)
	tree := plumbing.ComputeHash(plumbing.TreeObject, content).String()
	writeLoose(t, objects, tree, io.MultiReader(strings.NewReader(fmt.Sprintf("tree %d\x00", len(content))), bytes.NewReader(content)))
	return tree
}

// pulled opens the repository at dir (bare or not) and pulls its main
// branch into a new sandbox.
func pulled(t *testing.T, dir string, bare bool) *sandbox {
	t.Helper()
	open := targets.OpenLocal
	if bare {
		open = targets.OpenLocalBare
	}
	tgt, err := open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	sb := newSandbox(t, tgt)
	sb.pull(t, tgt, "refs/heads/main")
	return sb
}

// A pull from a local repository copies its commit and trees, not its
// blobs: the store holds none, and each file is read from the
// repository's own packs when the worker first reads it.
func TestPullIsLazy(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
	files := map[string]targettest.File{}
	var blobBytes int64
	for i := 0; i < 200; i++ {
		c := strings.Repeat(fmt.Sprintf("line %d of file %d\n", i, i), 50)
		files[fmt.Sprintf("d%d/f%03d.txt", i%7, i)] = targettest.File{Data: c}
		blobBytes += int64(len(c))
	}
	files["link"] = targettest.File{Data: "d0/f000.txt", Symlink: true}
	(&gitInspector{dir: dir}).Commit(t, "main", files)
	run(t, dir, nil, nil, "repack", "-adq")
	sb := pulled(t, dir, true)
	if held := sb.store.Bytes(); held > blobBytes/10 {
		t.Fatalf("after the pull the store holds %d bytes; the blobs are %d", held, blobBytes)
	}
	if c := sb.store.CachedBytes(); c != 0 {
		t.Fatalf("%d bytes read before any file was", c)
	}
	fi, err := sb.ws.Stat("d3/f003.txt")
	if err != nil || fi.Size() != int64(len(files["d3/f003.txt"].Data)) {
		t.Fatalf("stat: %v %v", fi, err)
	}
	got, err := sb.ws.ReadFile("d3/f003.txt")
	if err != nil || string(got) != files["d3/f003.txt"].Data {
		t.Fatalf("read: %v", err)
	}
	if c := sb.store.CachedBytes(); c != int64(len(got)) {
		t.Fatalf("one read cached %d bytes, want %d", c, len(got))
	}
	if l, err := sb.ws.Readlink("link"); err != nil || l != "d0/f000.txt" {
		t.Fatalf("readlink: %q %v", l, err)
	}
}

// A lazy file moved and a new one written are staged without reading the
// moved file; pushed to another repository, which lacks the base, the
// pack carries the moved file's blob, read from the first repository,
// and the second one's git accepts it.
func TestLazyBlobPushedElsewhere(t *testing.T) {
	src := t.TempDir()
	run(t, src, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
	(&gitInspector{dir: src}).Commit(t, "main", toFiles(map[string]string{"a.txt": "a\n", "b/c.txt": "c\n"}))
	sb := pulled(t, src, true)
	if err := sb.ws.Rename("b/c.txt", "moved.txt"); err != nil {
		t.Fatal(err)
	}
	if err := sb.ws.WriteFile("new.txt", []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := sb.area.Stage(nil, "move and add")
	if err != nil {
		t.Fatal(err)
	}
	if n := sb.store.CachedBytes(); n != 0 {
		t.Fatalf("staging a move read %d bytes", n)
	}
	dst, to := emptyBare(t)
	sb.gate = newSandbox(t, to).gate
	if _, err := sb.pushCommit(t, to, "refs/heads/main", plumbing.ZeroHash, c.ID, c.Tree); err != nil {
		t.Fatal(err)
	}
	in := &gitInspector{dir: dst}
	in.Fsck(t)
	tree := in.Tree(t, c.ID)
	if tree["moved.txt"].Data != "c\n" || tree["a.txt"].Data != "a\n" || tree["new.txt"].Data != "new\n" {
		t.Fatalf("pushed tree: %+v", tree)
	}
}

// The repository a base was pulled from is hostile too: a loose object
// whose content is not what its id says is refused when read, and the
// worker is told what to do; a repository removed after the pull is a
// clear error, not a crash.
func TestLazyBlobFromAHostileRepository(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	commitFiles(t, dir, map[string]string{"a.txt": "good!\n", "b.txt": "fine\n"})
	id := strings.TrimSpace(run(t, dir, nil, nil, "rev-parse", "HEAD:a.txt"))
	// The same length, other bytes, under a.txt's id.
	writeLoose(t, filepath.Join(dir, ".git", "objects"), id, strings.NewReader("blob 6\x00EVIL!\n"))
	noCheckout(t, dir, "a.txt")
	sb := pulled(t, dir, false)
	_, err := sb.ws.ReadFile("a.txt")
	if !errors.Is(err, memfs.ErrUnavailable) || !strings.Contains(err.Error(), "does not hash to its id") {
		t.Fatalf("reading a forged blob: %v", err)
	}
	if got, err := sb.ws.ReadFile("b.txt"); err != nil || string(got) != "fine\n" {
		t.Fatalf("the other file: %q %v", got, err)
	}
	if err := os.RemoveAll(filepath.Join(dir, ".git", "objects")); err != nil {
		t.Fatal(err)
	}
	sb.store.CloseSources() // as a restarted server would find it: nothing open
	if _, err := sb.store.LoadBlob(plumbing.NewHash(id)); err == nil {
		t.Fatal("a blob of a removed repository loaded")
	}
}

// A tree git lists leniently (here a deprecated 100664 mode, which
// ls-tree shows as 100644) cannot be written again from the listing: the
// rebuilt tree would not hash to its id. The pull copies such a tree as it
// is, and the workspace has its files.
func TestPullOfATreeGitListsLeniently(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
	blob := strings.TrimSpace(run(t, dir, []byte("odd mode\n"), nil, "hash-object", "-w", "--stdin"))
	tree := lenientTree(t, filepath.Join(dir, "objects"), blob)
	mainAt(t, dir, tree)
	sb := pulled(t, dir, true)
	if !sb.store.Holds(plumbing.NewHash(tree)) {
		t.Fatal("the tree was not copied as it is")
	}
	if got, err := sb.ws.ReadFile("odd.txt"); err != nil || string(got) != "odd mode\n" {
		t.Fatalf("read: %q %v", got, err)
	}
}

// noCheckout removes the checked-out copies of paths from the working
// tree at dir: a lazy read takes a file there that holds the blob, and a
// test of what the repository's objects hold must not find it.
func noCheckout(t *testing.T, dir string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			t.Fatal(err)
		}
	}
}
