package staging_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
)

// countingSource is a blob source over a map that records what it read.
type countingSource struct {
	mu    sync.Mutex
	blobs map[plumbing.Hash][]byte
	read  []plumbing.Hash
}

func (c *countingSource) ReadBlob(h plumbing.Hash, _ int64) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.blobs[h]
	if !ok {
		return nil, plumbing.ErrObjectNotFound
	}
	c.read = append(c.read, h)
	return b, nil
}

func (c *countingSource) BlobSize(h plumbing.Hash) (int64, error) {
	b, ok := c.blobs[h]
	if !ok {
		return 0, plumbing.ErrObjectNotFound
	}
	return int64(len(b)), nil
}

func (c *countingSource) HasBlob(h plumbing.Hash) error {
	_, err := c.BlobSize(h)
	return err
}

// A status over a lazy base reads the .gitignore files along the paths
// of the created files, once each, and no other content: not the other
// files, not a .gitignore elsewhere, not one inside an excluded directory.
func TestStatusReadsOnlyTheGitignoresItNeeds(t *testing.T) {
	needGit(t)
	dir := newRepo(t)
	writeDisk(t, dir, map[string]string{
		".gitignore": "*.o\nbuild/\n", "a/.gitignore": "!keep.o\n", "a/b/.gitignore": "*.tmp\n",
		"other/.gitignore": "*\n", "build/.gitignore": "!x\n", "a/b/code.go": "package b\n", "big.bin": strings.Repeat("x", 1<<16),
	})
	run(t, dir, "add", "-A", "-f")
	gitWith(t, dir, []string{"GIT_AUTHOR_NAME=o", "GIT_AUTHOR_EMAIL=o@b", "GIT_COMMITTER_NAME=o", "GIT_COMMITTER_EMAIL=o@b"}, "commit", "-qm", "base")

	e := newEnv(t)
	src := &countingSource{blobs: map[plumbing.Hash][]byte{}}
	repo, err := git.PlainOpen(dir)
	must(t, err)
	iter, err := repo.Storer.IterEncodedObjects(plumbing.AnyObject)
	must(t, err)
	must(t, iter.ForEach(func(o plumbing.EncodedObject) error {
		r, err := o.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if o.Type() == plumbing.BlobObject {
			src.blobs[o.Hash()] = data // in the repository, not the store
			return nil
		}
		m := &plumbing.MemoryObject{}
		m.SetType(o.Type())
		m.Write(data)
		_, err = e.store.SetEncodedObject(m)
		return err
	}))
	e.store.AddSource("repo", src)
	_, err = e.area.SeedFrom(plumbing.NewHash(strings.TrimSpace(run(t, dir, "rev-parse", "main"))), nil)
	must(t, err)

	must(t, e.ws.MkdirAll("a/b", 0o755))
	must(t, e.ws.MkdirAll("build", 0o755))
	for _, p := range []string{"a/b/x.o", "a/b/keep.o", "a/b/y.tmp", "a/b/new.go", "build/x", "top.o"} {
		e.write(t, p, "new")
	}
	st := e.area.Status()
	var ignored []string
	for _, g := range st.Ignored {
		ignored = append(ignored, g.Path)
	}
	if want := []string{"a/b/x.o", "a/b/y.tmp", "build/x", "top.o"}; !slices.Equal(ignored, want) {
		t.Errorf("ignored %v, want %v", ignored, want)
	}
	idOf := func(p string) plumbing.Hash {
		return plumbing.NewHash(strings.TrimSpace(run(t, dir, "rev-parse", "main:"+p)))
	}
	var read, want []string
	for _, h := range src.read {
		read = append(read, h.String())
	}
	for _, p := range []string{".gitignore", "a/.gitignore", "a/b/.gitignore"} {
		want = append(want, idOf(p).String())
	}
	sort.Strings(read)
	sort.Strings(want)
	if !slices.Equal(read, want) {
		t.Errorf("the status read %d blobs, want the 3 .gitignore files on the way (%v): %v", len(read), want, read)
	}
	// A second status reads nothing more: the parsed files are kept by id.
	n := len(src.read)
	e.area.Status()
	if len(src.read) != n {
		t.Errorf("a second status read %d more blobs", len(src.read)-n)
	}
}

// ignoredBench is the workload of BenchmarkStatusIgnored: a 10,000-file
// base with a .gitignore, 10 edits, 100 new files and 6,000 new files the
// .gitignore excludes (5,000 in node_modules, 1,000 in __pycache__
// directories).
func ignoredBench() (gitignore string, edits, created, ignored []string) {
	gitignore = "node_modules/\n__pycache__/\n*.pyc\n.pytest_cache/\n"
	for j := 0; j < 10; j++ {
		edits = append(edits, benchPath(j*997))
	}
	for j := 0; j < 100; j++ {
		created = append(created, fmt.Sprintf("d%02d/new%03d.py", j%100, j))
	}
	for j := 0; j < 5000; j++ {
		ignored = append(ignored, fmt.Sprintf("node_modules/pkg%03d/lib/f%04d.js", j%100, j))
	}
	for j := 0; j < 1000; j++ {
		ignored = append(ignored, fmt.Sprintf("d%02d/__pycache__/m%04d.cpython-311.pyc", j%100, j))
	}
	return
}

// BenchmarkStatusIgnored is Status with 6,000 ignored files among 110
// changes; the peers are the same status where nothing is ignored (what
// airlock answered before it knew .gitignore: every file listed) and `git
// status --porcelain` on the same tree on tmpfs.
func BenchmarkStatusIgnored(b *testing.B) {
	gi, edits, created, ignored := ignoredBench()
	for _, withRules := range []bool{true, false} {
		name := "airlock"
		if !withRules {
			name = "airlock-no-gitignore"
		}
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, memfs.WithLimits(memfs.Limits{MaxTotalBytes: 4 << 30}))
			for j := 0; j < benchFiles; j++ {
				must(b, e.ws.WriteFile(benchPath(j), benchContent(j), 0o644))
			}
			if withRules {
				e.write(b, ".gitignore", gi)
			}
			_, err := e.area.Stage(nil, "base")
			must(b, err)
			for _, p := range append(append(edits, created...), ignored...) {
				must(b, e.ws.MkdirAll(path.Dir(p), 0o755))
				e.write(b, p, "x")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st := e.area.Status()
				if withRules && (len(st.Unstaged) != 110 || len(st.Ignored) != 6000) {
					b.Fatalf("%d unstaged, %d ignored", len(st.Unstaged), len(st.Ignored))
				}
			}
		})
	}
	b.Run("git-status", func(b *testing.B) {
		gitBin := needGit(b)
		dir := fastDir(b)
		sh := shellIn(b, dir)
		sh("git init -q .")
		write := func(p, content string) {
			os.MkdirAll(filepath.Join(dir, path.Dir(p)), 0o755)
			os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644)
		}
		for j := 0; j < benchFiles; j++ {
			write(benchPath(j), string(benchContent(j)))
		}
		write(".gitignore", gi)
		sh("git add -A && git commit -q -m base")
		for _, p := range append(append(edits, created...), ignored...) {
			write(p, "x")
		}
		sh("git status --porcelain >/dev/null")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(gitBin, "-c", "core.excludesFile=/dev/null", "status", "--porcelain", "--untracked-files=all")
			cmd.Dir, cmd.Env = dir, benchGitEnv()
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
