package targettest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/staging"
)

// SourceHarness is one kind of lazy base's blob source (staging.BlobSource):
// a local repository's read through git, a working tree's files first, a
// GitHub repository's fetched by id, each as a pull makes it or as a
// resumed session opens it again.
type SourceHarness struct {
	// New returns an empty repository of this kind: its inspector, whose
	// Commit makes branch main; the directory git reads its objects in
	// (its working tree or git directory), where the suite asks git what
	// each object is; and open, which returns the blob source of main's
	// tip as this kind reads it (open is called after the commit).
	New func(t *testing.T) (insp Inspector, dir string, open func(t *testing.T) staging.BlobSource)
	// Skip names cases this kind is known not to keep (as they appear
	// in test names), each with the reason beside it where it is set.
	Skip []string
}

// SourceSuite runs what every blob source promises alike against h: each
// blob of a real repository read as `git cat-file --batch` gives it, its
// size and presence as git says; trees and commits never given as blobs;
// a missing id refused as not found; a blob larger than the caller may
// hold refused; reads from many goroutines at once; and, where the source
// streams (staging.BlobStreamSource) or batches (staging.BlobBatchSource),
// the same through those, with a stream ended by its caller's error or
// its context.
func SourceSuite(t *testing.T, h SourceHarness) {
	insp, dir, open := h.New(t)
	insp.Commit(t, "main", sourceFiles())
	objs := gitObjects(t, dir, "main")
	src := open(t)
	for _, c := range []struct {
		name string
		run  func(*testing.T, staging.BlobSource, *repoObjects)
	}{
		{"EveryBlobAsGitReadsIt", everyBlob},
		{"TreesAndCommitsAreNotBlobs", notBlobs},
		{"MissingBlob", missingBlob},
		{"MissingIsNotFound", missingIsNotFound},
		{"LargerThanMax", largerThanMax},
		{"Concurrent", concurrentReads},
		{"Stream", streamAll},
		{"StreamEndedByCaller", streamEnded},
		{"StreamCancelled", streamCancelled},
		{"Batch", batchAll},
	} {
		t.Run(c.name, func(t *testing.T) {
			if slices.Contains(h.Skip, c.name) {
				t.Skip("skipped by the harness")
			}
			c.run(t, src, objs)
		})
	}
	t.Run("Closed", func(t *testing.T) {
		cl, ok := src.(io.Closer)
		if !ok {
			t.Skip("the source holds nothing open")
		}
		if err := cl.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		for _, b := range objs.blobs[:3] {
			if data, err := src.ReadBlob(b, 1<<30); err == nil && !bytes.Equal(data, objs.data[b]) {
				t.Fatalf("after Close, %s read as %q", b, data)
			}
		}
	})
}

// sourceFiles is the suite's repository: text and binary, empty and
// larger than a pipe's buffer, executable, a link, names git quotes, a
// file whose checkout differs from its blob (eol=crlf), and enough small
// files that a stream is split between processes.
func sourceFiles() map[string]File {
	files := map[string]File{
		".gitattributes":          {Data: "*.crlf text eol=crlf\n"},
		"README.md":               {Data: "# suite\n"},
		"empty":                   {},
		"bin/tool.sh":             {Data: "#!/bin/sh\necho hi\n", Executable: true},
		"link":                    {Data: "README.md", Symlink: true},
		"nul.bin":                 {Data: "a\x00b\x00\xff\xfe" + strings.Repeat("\x00", 3000)},
		"lines.crlf":              {Data: "one\ntwo\nthree\n"},
		"sp ace/tab\there/é.txt":  {Data: "odd names\n"},
		"deep/a/b/c/d/e/f/g.txt":  {Data: "deep\n"},
		"big/large.txt":           {Data: strings.Repeat("0123456789abcdef", 300<<10/16)},
		"big/same-as-readme.copy": {Data: "# suite\n"}, // one blob at two paths
	}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 100; i++ {
		b := make([]byte, 40+rng.Intn(400))
		rng.Read(b)
		files[fmt.Sprintf("many/d%d/f%03d.txt", i%7, i)] = File{Data: fmt.Sprintf("file %d\n%x\n", i, b)}
	}
	return files
}

// repoObjects is what git says a commit holds.
type repoObjects struct {
	blobs  []plumbing.Hash // each once
	others []plumbing.Hash // its trees and the commit
	data   map[plumbing.Hash][]byte
}

// gitObjects asks git (ls-tree, then cat-file --batch) for every object of
// branch's tip in dir.
func gitObjects(t *testing.T, dir, branch string) *repoObjects {
	t.Helper()
	o := &repoObjects{data: map[plumbing.Hash][]byte{}}
	commit := plumbing.NewHash(strings.TrimSpace(Git(t, dir, nil, nil, "rev-parse", "refs/heads/"+branch)))
	tree := plumbing.NewHash(strings.TrimSpace(Git(t, dir, nil, nil, "rev-parse", commit.String()+"^{tree}")))
	o.others = append(o.others, commit, tree)
	seen := map[plumbing.Hash]bool{}
	for _, line := range strings.Split(Git(t, dir, nil, nil, "ls-tree", "-r", "-t", "-z", "--full-tree", commit.String()), "\x00") {
		meta, _, ok := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			continue
		}
		id := plumbing.NewHash(f[2])
		switch {
		case f[1] == "tree":
			o.others = append(o.others, id)
		case f[1] == "blob" && !seen[id]:
			seen[id] = true
			o.blobs = append(o.blobs, id)
		}
	}
	var in bytes.Buffer
	for _, b := range o.blobs {
		in.WriteString(b.String() + "\n")
	}
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Dir, cmd.Env, cmd.Stdin = dir, GitEnv(), &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file --batch: %v", err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	for _, b := range o.blobs {
		header, err := r.ReadString('\n')
		f := strings.Fields(header)
		if err != nil || len(f) != 3 || f[0] != b.String() || f[1] != "blob" {
			t.Fatalf("git cat-file --batch: %q for %s (%v)", header, b, err)
		}
		size, _ := strconv.Atoi(f[2])
		data := make([]byte, size+1) // and its newline
		if _, err := io.ReadFull(r, data); err != nil {
			t.Fatal(err)
		}
		o.data[b] = data[:size]
	}
	if len(o.blobs) < 100 {
		t.Fatalf("git lists %d blobs; the suite's repository has more", len(o.blobs))
	}
	return o
}

func everyBlob(t *testing.T, src staging.BlobSource, o *repoObjects) {
	for _, b := range o.blobs {
		want := o.data[b]
		if err := src.HasBlob(b); err != nil {
			t.Errorf("HasBlob(%s): %v", b, err)
		}
		if n, err := src.BlobSize(b); err != nil || n != int64(len(want)) {
			t.Errorf("BlobSize(%s) = %d, %v; git says %d", b, n, err, len(want))
		}
		data, err := src.ReadBlob(b, 1<<30)
		if err != nil || !bytes.Equal(data, want) {
			t.Errorf("ReadBlob(%s): %d bytes, %v; git gives %d bytes", b, len(data), err, len(want))
		}
	}
}

// A tree or a commit asked for as a blob is not one: its bytes would be
// taken for a file's.
func notBlobs(t *testing.T, src staging.BlobSource, o *repoObjects) {
	for _, h := range o.others {
		if data, err := src.ReadBlob(h, 1<<30); err == nil {
			t.Errorf("ReadBlob(%s), a tree or commit, gave %d bytes", h, len(data))
		}
		if err := src.HasBlob(h); err == nil {
			t.Errorf("HasBlob(%s), a tree or commit: nil", h)
		}
	}
}

var missing = plumbing.ComputeHash(plumbing.BlobObject, []byte("in no repository of the suite\n"))

// A blob the repository lacks is refused, and the source goes on.
func missingBlob(t *testing.T, src staging.BlobSource, o *repoObjects) {
	if data, err := src.ReadBlob(missing, 1<<30); err == nil {
		t.Errorf("ReadBlob of a missing blob gave %d bytes", len(data))
	}
	if err := src.HasBlob(missing); err == nil {
		t.Error("HasBlob of a missing blob: nil")
	}
	if _, err := src.BlobSize(missing); err == nil {
		t.Error("BlobSize of a missing blob: no error")
	}
	// And the source still reads what it has.
	if data, err := src.ReadBlob(o.blobs[0], 1<<30); err != nil || !bytes.Equal(data, o.data[o.blobs[0]]) {
		t.Errorf("after a missing blob, ReadBlob(%s): %v", o.blobs[0], err)
	}
}

// A missing blob is plumbing.ErrObjectNotFound (staging.BlobSource), which
// the store takes as "ask the next source".
func missingIsNotFound(t *testing.T, src staging.BlobSource, o *repoObjects) {
	if _, err := src.ReadBlob(missing, 1<<30); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("ReadBlob of a missing blob: %v; want plumbing.ErrObjectNotFound", err)
	}
}

// A blob larger than max is refused, one of exactly max is not.
func largerThanMax(t *testing.T, src staging.BlobSource, o *repoObjects) {
	big := o.blobs[0]
	for _, b := range o.blobs {
		if len(o.data[b]) > len(o.data[big]) {
			big = b
		}
	}
	n := int64(len(o.data[big]))
	if data, err := src.ReadBlob(big, n-1); err == nil {
		t.Errorf("ReadBlob(%s, max %d) of a %d-byte blob gave %d bytes", big, n-1, n, len(data))
	}
	if data, err := src.ReadBlob(big, n); err != nil || !bytes.Equal(data, o.data[big]) {
		t.Errorf("ReadBlob(%s, max %d) of a %d-byte blob: %v", big, n, n, err)
	}
}

// Many goroutines at once, each in its own order, each blob as git gives
// it (run under -race).
func concurrentReads(t *testing.T, src staging.BlobSource, o *repoObjects) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for _, i := range rng.Perm(len(o.blobs))[:12] {
				b := o.blobs[i]
				data, err := src.ReadBlob(b, 1<<30)
				if err != nil || !bytes.Equal(data, o.data[b]) {
					errs <- fmt.Errorf("goroutine %d: ReadBlob(%s): %d bytes, %v", g, b, len(data), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func streamer(t *testing.T, src staging.BlobSource) staging.BlobStreamSource {
	s, ok := src.(staging.BlobStreamSource)
	if !ok {
		t.Skip("the source does not stream")
	}
	return s
}

// Every id once, with its content, checked or not; a missing one with
// plumbing.ErrObjectNotFound; kept buffers stay as they were given.
func streamAll(t *testing.T, src staging.BlobSource, o *repoObjects) {
	s := streamer(t, src)
	missing := plumbing.ComputeHash(plumbing.BlobObject, []byte("streamed from nowhere\n"))
	ids := append(append([]plumbing.Hash{}, o.blobs...), missing)
	var mu sync.Mutex
	got := make([][]byte, len(ids))
	calls := make([]int, len(ids))
	err := s.StreamBlobs(context.Background(), ids, 1<<30, true, func(i int, data []byte, checked bool, err error) error {
		mu.Lock()
		defer mu.Unlock()
		calls[i]++
		switch {
		case ids[i] == missing:
			if !errors.Is(err, plumbing.ErrObjectNotFound) {
				t.Errorf("stream of a missing blob: %v; want plumbing.ErrObjectNotFound", err)
			}
		case err != nil:
			t.Errorf("stream of %s: %v", ids[i], err)
		case checked && plumbing.ComputeHash(plumbing.BlobObject, data) != ids[i]:
			t.Errorf("stream of %s: said checked, and does not hash to its id", ids[i])
		default:
			got[i] = data
		}
		return nil
	})
	if err != nil {
		t.Fatalf("StreamBlobs: %v", err)
	}
	for i, b := range o.blobs {
		if calls[i] != 1 {
			t.Errorf("%s given %d times", b, calls[i])
		}
		if !bytes.Equal(got[i], o.data[b]) {
			t.Errorf("%s streamed as %d bytes; git gives %d", b, len(got[i]), len(o.data[b]))
		}
	}
	if calls[len(ids)-1] != 1 {
		t.Errorf("the missing blob was answered %d times", calls[len(ids)-1])
	}
}

// An error of fn ends the stream and is what it returns.
func streamEnded(t *testing.T, src staging.BlobSource, o *repoObjects) {
	s := streamer(t, src)
	stop := errors.New("the caller has had enough")
	var mu sync.Mutex
	n := 0
	err := s.StreamBlobs(context.Background(), o.blobs, 1<<30, false, func(int, []byte, bool, error) error {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n >= 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("StreamBlobs ended by its caller: %v; want the caller's error", err)
	}
	if n == len(o.blobs) {
		t.Errorf("the stream went on to the end (%d calls) after its caller's error", n)
	}
}

// A stream whose context is done ends with the context's error, and the
// source reads again afterwards.
func streamCancelled(t *testing.T, src staging.BlobSource, o *repoObjects) {
	s := streamer(t, src)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	err := s.StreamBlobs(ctx, o.blobs, 1<<30, false, func(int, []byte, bool, error) error {
		once.Do(cancel)
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("StreamBlobs with its context cancelled: %v; want context.Canceled", err)
	}
	if data, err := src.ReadBlob(o.blobs[1], 1<<30); err != nil || !bytes.Equal(data, o.data[o.blobs[1]]) {
		t.Errorf("after a cancelled stream, ReadBlob(%s): %v", o.blobs[1], err)
	}
}

func batchAll(t *testing.T, src staging.BlobSource, o *repoObjects) {
	b, ok := src.(staging.BlobBatchSource)
	if !ok {
		t.Skip("the source does not batch")
	}
	got, err := b.ReadBlobs(o.blobs)
	if err != nil {
		t.Fatalf("ReadBlobs: %v", err)
	}
	for _, h := range o.blobs {
		if !bytes.Equal(got[h], o.data[h]) {
			t.Errorf("ReadBlobs: %s is %d bytes; git gives %d", h, len(got[h]), len(o.data[h]))
		}
	}
}
