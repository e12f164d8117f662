package staging

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
)

// BlobSource reads blobs the store does not hold, from where they already
// are: the object database of the repository a base was pulled from. A
// base's blobs are never copied into the store; the store reads them
// through its sources on first use and keeps them in a cache it may empty
// at any time, because they can always be read again.
type BlobSource interface {
	// ReadBlob returns the content of blob h, checked against h;
	// plumbing.ErrObjectNotFound when the source has no such blob. A
	// blob whose header declares more than max bytes is refused before
	// anything is allocated for it: the source is a repository on disk,
	// and an object's header is whatever is written there.
	ReadBlob(h plumbing.Hash, max int64) ([]byte, error)
	// BlobSize returns the size of blob h from its header, without
	// reading the content.
	BlobSize(h plumbing.Hash) (int64, error)
	// HasBlob reports whether the source still has blob h, without
	// reading it (nil: it has). BlobSize may answer from what a fetch
	// listed; this asks the repository as it is now.
	HasBlob(h plumbing.Hash) error
}

// BlobBatchSource is a source for which reading many blobs costs about
// what reading one does: a remote one, where each read is a round trip.
// Store.Prefetch reads through it.
type BlobBatchSource interface {
	BlobSource
	// ReadBlobs returns the content of each of hs, checked against its
	// id; an error when any cannot be read.
	ReadBlobs(hs []plumbing.Hash) (map[plumbing.Hash][]byte, error)
}

// sources are the store's blob sources and the cache of what was read
// through them.
type sources struct {
	mu    sync.Mutex
	keys  []string
	srcs  []BlobSource
	cache map[plumbing.Hash]*list.Element // of *cached
	lru   list.List                       // most recently used first
	bytes int64
	cap   int64
	limit int64 // the store's: no blob read through a source is larger
}

type cached struct {
	h    plumbing.Hash
	data []byte
}

// AddSource adds src, under key (a target's id), to the places blobs are
// read from; a source already under key is replaced. Sources added later
// are tried first: the newest pull is the likeliest to have a blob.
func (s *Store) AddSource(key string, src BlobSource) {
	x := &s.src
	x.mu.Lock()
	defer x.mu.Unlock()
	// New slices every time: readers iterate a copy of the old ones
	// without the lock.
	keys, srcs := []string{key}, []BlobSource{src}
	for i, k := range x.keys {
		if k != key {
			keys, srcs = append(keys, k), append(srcs, x.srcs[i])
		}
	}
	x.keys, x.srcs = keys, srcs
}

// Sources lists the keys of the store's blob sources, newest first.
func (s *Store) Sources() []string {
	s.src.mu.Lock()
	defer s.src.mu.Unlock()
	return append([]string(nil), s.src.keys...)
}

// LoadBlob returns the content of blob id: the store's own, or read
// through a source (and cached). It implements memfs.Loader: lazy files
// of a workspace read their content through the session's store.
func (s *Store) LoadBlob(id [20]byte) ([]byte, error) { return s.ReadBlob(plumbing.Hash(id)) }

var (
	_ memfs.Loader     = (*Store)(nil)
	_ memfs.Prefetcher = (*Store)(nil)
)

func (x *sources) read(h plumbing.Hash) ([]byte, error) {
	x.mu.Lock()
	if e, ok := x.cache[h]; ok {
		x.lru.MoveToFront(e)
		data := e.Value.(*cached).data
		x.mu.Unlock()
		return data, nil
	}
	keys, srcs, limit := x.keys, x.srcs, x.limit
	x.mu.Unlock()
	var failed readFailure
	for i, src := range srcs {
		// Read outside the lock: a read may inflate megabytes, and
		// readers of other blobs (a search loads a whole base in
		// parallel) must not wait for it.
		data, err := src.ReadBlob(h, limit)
		if err == nil && plumbing.ComputeHash(plumbing.BlobObject, data) != h {
			// A source is a repository on disk: hostile until checked.
			err = errNotItsID
		}
		if err != nil {
			failed.add(keys[i], err)
			continue
		}
		x.put(h, data)
		return data, nil
	}
	return nil, failed.err(h)
}

// errNotItsID: a source gave content that does not hash to the id asked
// for.
var errNotItsID = errors.New("what it gave does not hash to the blob's id")

// readFailure gathers why no source could give a blob, to say what to do
// about it: each piece of advice is one that works when followed.
type readFailure struct {
	gone  []string // sources that do not have it
	other string   // the first source that failed otherwise, and why
	err1  error
}

func (f *readFailure) add(key string, err error) {
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		f.gone = append(f.gone, key)
	} else if f.other == "" {
		f.other, f.err1 = key, err
	}
}

// err is the error for blob h: it wraps plumbing.ErrObjectNotFound when
// no source has it.
func (f *readFailure) err(h plumbing.Hash) error {
	switch {
	case f.other != "" && errors.Is(f.err1, errNotItsID):
		return fmt.Errorf("blob %s read from %s does not hash to its id: the repository is damaged (git fsck there says where); write the file anew (write_file) or delete it (delete_file)", h, f.other)
	case f.other != "":
		return fmt.Errorf("blob %s could not be read from %s: %w; write the file anew (write_file) or delete it (delete_file) if reading it again fails the same way", h, f.other, f.err1)
	case len(f.gone) > 0:
		return fmt.Errorf("blob %s is no longer in %s (%w: a git gc pruned it after its branch was rewritten, or the repository was replaced): git_pull with no arguments brings the workspace to what the branch holds now; if the file still cannot be read, its content is gone: write it anew (write_file) or delete it (delete_file)",
			h, strings.Join(f.gone, ", "), plumbing.ErrObjectNotFound)
	}
	return fmt.Errorf("blob %s: %w: no repository it can be read from is open (the one it was pulled from could not be opened when the session resumed): restore that repository and git_pull with no arguments to read from it again, or git_pull the file from another target that has it",
		h, plumbing.ErrObjectNotFound)
}

// put caches data, dropping the least recently used blobs past the cap.
// A blob larger than the cap is not cached: whoever asked keeps it.
func (x *sources) put(h plumbing.Hash, data []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.cache[h]; ok || int64(len(data)) > x.cap {
		return
	}
	x.cache[h] = x.lru.PushFront(&cached{h: h, data: data})
	x.bytes += int64(len(data))
	for x.bytes > x.cap {
		e := x.lru.Back()
		c := e.Value.(*cached)
		x.lru.Remove(e)
		delete(x.cache, c.h)
		x.bytes -= int64(len(c.data))
	}
}

// Prefetch reads ahead, into the cache, the blobs of ids that the store
// neither holds nor has cached, through the sources that read many at a
// time (BlobBatchSource), in as few reads as they take: what a caller
// about to read many lazy files asks first. It reads no more than the
// cache holds, by the blobs' sizes (sizes[i] is ids[i]'s when sizes is
// not nil: the workspace knows them, and a source may have to read a blob
// to tell), taking ids in order. It implements memfs.Prefetcher, and
// reports nothing: a blob it did not read is read when it is asked for.
func (s *Store) Prefetch(ids []plumbing.Hash, sizes []int64) {
	x := &s.src
	x.mu.Lock()
	var batchers []BlobBatchSource
	for _, src := range x.srcs {
		if b, ok := src.(BlobBatchSource); ok {
			batchers = append(batchers, b)
		}
	}
	x.mu.Unlock()
	if len(batchers) == 0 {
		return
	}
	var todo []plumbing.Hash
	var total int64
	seen := map[plumbing.Hash]bool{}
	for i, h := range ids {
		if seen[h] || s.Holds(h) {
			continue
		}
		seen[h] = true
		x.mu.Lock()
		_, cached := x.cache[h]
		x.mu.Unlock()
		if cached {
			continue
		}
		var n int64
		if sizes != nil {
			n = sizes[i]
		} else {
			var err error
			if n, err = x.size(h); err != nil {
				continue
			}
		}
		if total+n > x.cap {
			continue
		}
		todo, total = append(todo, h), total+n
	}
	for _, b := range batchers {
		if len(todo) == 0 {
			return
		}
		got, err := b.ReadBlobs(todo)
		if err != nil {
			continue
		}
		rest := todo[:0]
		for _, h := range todo {
			data, ok := got[h]
			if ok && plumbing.ComputeHash(plumbing.BlobObject, data) == h {
				x.put(h, data)
			} else {
				rest = append(rest, h)
			}
		}
		todo = rest
	}
}

// size returns blob h's size from the first source that has it.
func (x *sources) size(h plumbing.Hash) (int64, error) {
	x.mu.Lock()
	if e, ok := x.cache[h]; ok {
		n := int64(len(e.Value.(*cached).data))
		x.mu.Unlock()
		return n, nil
	}
	srcs := x.srcs
	x.mu.Unlock()
	for _, src := range srcs {
		if n, err := src.BlobSize(h); err == nil {
			return n, nil
		}
	}
	return 0, plumbing.ErrObjectNotFound
}

// HasBlob checks that blob h can be read now: the store holds it, or a
// source still has it. A push asks before it starts sending a pack, which
// could not be taken back halfway.
func (s *Store) HasBlob(h plumbing.Hash) error {
	if _, ok := s.held(h); ok {
		return nil
	}
	x := &s.src
	x.mu.Lock()
	_, ok := x.cache[h]
	srcs := x.srcs
	x.mu.Unlock()
	if ok {
		return nil
	}
	err := plumbing.ErrObjectNotFound
	for _, src := range srcs {
		if err = src.HasBlob(h); err == nil {
			return nil
		}
	}
	return err
}

// CloseSources closes the sources that hold something open (a local
// repository's packs). Lazy files cannot be read after it.
func (s *Store) CloseSources() {
	s.src.mu.Lock()
	srcs := s.src.srcs
	s.src.mu.Unlock()
	for _, src := range srcs {
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
	}
}

// CachedBytes is what the cache of blobs read through sources holds.
func (s *Store) CachedBytes() int64 {
	s.src.mu.Lock()
	defer s.src.mu.Unlock()
	return s.src.bytes
}
