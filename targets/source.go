package targets

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/airlock-dev/airlock/staging"
)

// repoSource reads blobs from a local repository's object database in
// place (its packs and loose objects): the source of a lazy base
// (staging.BlobSource). Nothing is copied until a blob is read, and then
// only that blob.
//
// go-git's object storage is not safe for concurrent use, so the source
// keeps up to GOMAXPROCS of them (each with its packs open and indexes
// loaded once) and hands each read one: a search that loads a whole base
// inflates in parallel.
type repoSource struct {
	common string // the repository's common git directory
	idle   chan *filesystem.Storage
	sizes  sync.Map // plumbing.Hash -> int64: blob sizes a fetch listed
	mu     sync.Mutex
	all    []*filesystem.Storage
	closed bool
}

var _ staging.BlobSource = (*repoSource)(nil)

func newRepoSource(common string) *repoSource {
	return &repoSource{common: common, idle: make(chan *filesystem.Storage, runtime.GOMAXPROCS(0))}
}

// deltaCache bounds each storage's cache of inflated objects (delta bases
// read on the way to a blob): go-git's default is 96 MiB per storage.
const deltaCache = 8 * cache.MiByte

func (r *repoSource) get() (*filesystem.Storage, error) {
	select {
	case st := <-r.idle:
		return st, nil
	default:
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("the source %s is closed", r.common)
	}
	if len(r.all) < cap(r.idle) {
		st := objectStorage(r.common)
		r.all = append(r.all, st)
		r.mu.Unlock()
		return st, nil
	}
	r.mu.Unlock()
	return <-r.idle, nil
}

// objectStorage opens the object database of the repository whose common
// git directory is common, keeping its packs open once read.
//
// Objects borrowed from another repository (objects/info/alternates, as
// git clone --shared and --reference write) are found where git finds
// them: git lists them as the repository's own, so a base pulled from it
// names them. go-git looks for alternates inside the repository's own
// directory unless told otherwise, and would find none. Whatever is read
// there is checked against its id like any other object.
//
// Every loose object is streamed (LargeObjectThreshold 1), so that what
// is read stops where its header says: go-git otherwise inflates a loose
// object whole into memory, however far past its header its body goes,
// and a few megabytes of zlib on disk become gigabytes. (Packed objects
// past the threshold are streamed too, bounded the same way; packs of an
// alternate are read with go-git's defaults.)
func objectStorage(common string) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(osfs.New(common), cache.NewObjectLRU(deltaCache),
		filesystem.Options{KeepDescriptors: true, AlternatesFS: osfs.New("/"), LargeObjectThreshold: 1})
}

func (r *repoSource) put(st *filesystem.Storage) { r.idle <- st }

// warm opens a storage and loads its pack indexes, so that the worker's
// first read finds them ready: it runs while the workspace is seeded.
func (r *repoSource) warm() {
	st, err := r.get()
	if err != nil {
		return
	}
	defer r.put(st)
	st.HasEncodedObject(plumbing.ZeroHash)
}

// ReadBlob reads blob h whole, if its header declares at most max bytes
// and, when a fetch listed it, the size git listed: the repository may
// have changed since, and a header is read from disk like the rest. The
// store checks the content against h.
func (r *repoSource) ReadBlob(h plumbing.Hash, max int64) (data []byte, err error) {
	if n, ok := r.sizes.Load(h); ok {
		max = min(max, n.(int64))
	}
	err = r.with(func(st *filesystem.Storage) error {
		data, err = readBlob(st, h, max)
		return err
	})
	return data, err
}

func readBlob(st *filesystem.Storage, h plumbing.Hash, max int64) ([]byte, error) {
	o, err := st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	if o.Size() > max {
		return nil, fmt.Errorf("blob %s declares %d bytes, more than the %d it can hold", h, o.Size(), max)
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	// The declared size bounds what is read: a corrupt object that
	// inflates past it is an error, not an allocation without end.
	data := make([]byte, o.Size())
	if _, err := io.ReadFull(rd, data); err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	if n, _ := rd.Read(make([]byte, 1)); n > 0 {
		return nil, fmt.Errorf("blob %s holds more than its declared %d bytes", h, len(data))
	}
	return data, nil
}

// BlobSize reads blob h's size from its header (for a delta, the delta's
// header: nothing is rebuilt).
func (r *repoSource) BlobSize(h plumbing.Hash) (n int64, err error) {
	if n, ok := r.sizes.Load(h); ok {
		return n.(int64), nil
	}
	err = r.with(func(st *filesystem.Storage) error {
		n, err = st.EncodedObjectSize(h)
		return err
	})
	return n, err
}

// HasBlob asks the repository whether it has blob h now (a fetch's
// listing of sizes says only that it had it). Objects of alternates are
// found by reading them: go-git's HasEncodedObject does not look there.
func (r *repoSource) HasBlob(h plumbing.Hash) error {
	return r.with(func(st *filesystem.Storage) error {
		err := st.HasEncodedObject(h)
		if err == plumbing.ErrObjectNotFound {
			_, err = st.EncodedObject(plumbing.BlobObject, h)
		}
		return err
	})
}

// with runs fn with a storage of the pool. The repository is the user's
// and lives on while the session does: git gc packs its loose objects and
// replaces its packs, and a storage knows only the packs it indexed when
// first used (and keeps those it opened). So a failure is tried once more
// with the storage's packs closed and indexed anew: an object that moved
// is found where it went, and one that is gone for real fails again.
func (r *repoSource) with(fn func(*filesystem.Storage) error) error {
	st, err := r.get()
	if err != nil {
		return err
	}
	defer r.put(st)
	if err = fn(st); err == nil {
		return nil
	}
	st.Close()
	st.Reindex()
	return fn(st)
}

// OpenSource opens the blob source a target's Fetch added to a store
// under key (the target's ID), for a session resumed in another process:
// its lazy files read their content from the same repository (a local
// one's packs, or GitHub's github.com, with a token found as OpenGitHub
// finds one). OpenSourceWith says where GitHub is.
func OpenSource(ctx context.Context, key string) (staging.BlobSource, error) {
	return OpenSourceWith(ctx, key, GitHubOptions{})
}

// OpenSourceWith is OpenSource, with gh for a GitHub key, as a GitHub
// target would be opened.
func OpenSourceWith(ctx context.Context, key string, gh GitHubOptions) (staging.BlobSource, error) {
	var l *Local
	switch {
	case strings.HasPrefix(key, "github:"):
		g, err := OpenGitHub(ctx, key, gh)
		if err != nil {
			return nil, fmt.Errorf("no blob source for %q: %w", key, err)
		}
		// A source opened anew knows no sizes: the files that need
		// them were seeded with theirs, and journaled with them.
		return g.source(), nil
	case strings.HasPrefix(key, "local-bare:"):
		l = &Local{path: strings.TrimPrefix(key, "local-bare:"), bare: true}
	case strings.HasPrefix(key, "local:"):
		l = &Local{path: strings.TrimPrefix(key, "local:")}
	default:
		return nil, fmt.Errorf("no blob source for %q: not a local repository nor one on GitHub", key)
	}
	if !filepath.IsAbs(l.path) {
		return nil, fmt.Errorf("no blob source for %q: the path is not absolute", key)
	}
	common, err := l.commonDir(ctx)
	if err != nil {
		return nil, fmt.Errorf("the repository %s the base was pulled from: %w", l.path, err)
	}
	return newRepoSource(common), nil
}

// Close closes the packs the source holds open. Reads after it fail.
func (r *repoSource) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, st := range r.all {
		st.Close()
	}
	r.all = nil
	return nil
}
