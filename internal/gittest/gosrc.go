package gittest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var goRoot struct {
	once sync.Once
	dir  string
	err  error
}

// GoRoot is the root of the Go toolchain that runs the tests, as `go env
// GOROOT` tells it: go test puts its own go first on the tests' PATH.
// (runtime.GOROOT is deprecated: it is the root the binary was built
// with, which need not exist where it runs.)
func GoRoot(t testing.TB) string {
	t.Helper()
	goRoot.once.Do(func() {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		goRoot.dir, goRoot.err = strings.TrimSpace(string(out)), err
		if err == nil && goRoot.dir == "" {
			goRoot.err = fmt.Errorf("go env GOROOT printed nothing")
		}
	})
	if goRoot.err != nil {
		t.Fatalf("finding the Go toolchain (go env GOROOT): %v", goRoot.err)
	}
	return goRoot.dir
}

// GoSource makes a bare repository (in a new directory of the test's)
// whose branch main has one commit holding the Go toolchain's own source,
// GOROOT/src, or only the directories of it named: real code as git
// stores it for real, on every machine with Go. It returns the
// repository's path. A test that packs it (Repack) gets real deltas.
func GoSource(t testing.TB, dirs ...string) string {
	t.Helper()
	src := filepath.Join(GoRoot(t), "src")
	if _, err := os.Stat(filepath.Join(src, "go", "build")); err != nil {
		t.Skipf("the Go toolchain's source is not at %s: %v", src, err)
	}
	repo := filepath.Join(t.TempDir(), "gosrc.git")
	Git(t, "", "init", "-q", "--bare", "-b", "main", repo)
	args := []string{"--git-dir=" + repo, "--work-tree=" + src, "add", "-A", "--"}
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	Git(t, "", append(args, dirs...)...)
	Git(t, "", "--git-dir="+repo, "--work-tree="+src, "commit", "-q", "-m", "the Go toolchain's src")
	return repo
}

// Blob is one blob of a commit, as git lists it.
type Blob struct {
	Path string
	ID   string
	Size int64
}

// Blobs lists every blob of rev's tree in repo (path, id and size), by
// git ls-tree: what a pull of rev has to read.
func Blobs(t testing.TB, repo, rev string) []Blob {
	t.Helper()
	out := Git(t, "", "--git-dir="+repo, "ls-tree", "-r", "-l", "-z", "--full-tree", rev)
	var bs []Blob
	for _, rec := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 || f[1] != "blob" {
			continue
		}
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			t.Fatalf("ls-tree: %q", rec)
		}
		bs = append(bs, Blob{Path: path, ID: f[2], Size: size})
	}
	return bs
}

// CatFile reads the objects ids from repo with `git cat-file --batch`,
// the reference every reader of objects is compared with, and calls fn
// with each one's content.
func CatFile(t testing.TB, repo string, ids []string, fn func(id string, data []byte)) {
	t.Helper()
	cmd := exec.Command("git", "--git-dir="+repo, "--no-replace-objects", "cat-file", "--batch")
	cmd.Env = Env()
	cmd.Stdin = strings.NewReader(strings.Join(ids, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReaderSize(out, 1<<20)
	for _, id := range ids {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("git cat-file --batch: %v\n%s", err, stderr.String())
		}
		var gotID, typ string
		var size int
		if _, err := fmt.Sscanf(line, "%s %s %d", &gotID, &typ, &size); err != nil || gotID != id {
			t.Fatalf("git cat-file --batch answered %q for %s\n%s", line, id, stderr.String())
		}
		data := make([]byte, size+1)
		if _, err := io.ReadFull(rd, data); err != nil {
			t.Fatal(err)
		}
		fn(id, data[:size])
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("git cat-file --batch: %v\n%s", err, stderr.String())
	}
}

// HexID is a 20-byte object id as git prints it.
func HexID(id [20]byte) string { return fmt.Sprintf("%x", id) }
