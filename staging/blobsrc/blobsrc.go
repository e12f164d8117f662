package blobsrc

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// Source reads blobs the store does not hold, from where they already
// are: the object database of the repository a base was pulled from. A
// base's blobs are never copied into the store; the store reads them
// through its sources on first use and keeps them in a cache it may empty
// at any time, because they can always be read again.
type Source interface {
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

// BatchSource is a source for which reading many blobs costs about
// what reading one does: a remote one, where each read is a round trip.
// Store.Prefetch reads through it.
type BatchSource interface {
	Source
	// ReadBlobs returns the content of each of hs, checked against its
	// id; an error when any cannot be read.
	ReadBlobs(hs []plumbing.Hash) (map[plumbing.Hash][]byte, error)
}

// StreamSource is a source that reads many blobs in one pass for far
// less than a read each: a local repository, whose git streams them one
// after another. Store.StreamBlobs reads through it.
type StreamSource interface {
	Source
	// StreamBlobs reads the blobs ids, calling fn once for each, with
	// its content and whether the source checked it against its id
	// already (the store checks it when it did not), or with why it could
	// not be read (plumbing.ErrObjectNotFound, wrapped, when the source
	// lacks it). A blob whose header declares more than max bytes is
	// refused before it is read. fn may be called from several
	// goroutines at once; its data is valid only during the call unless
	// keep, with which each blob has a buffer of its own, for fn to keep.
	// An error of fn ends the stream and is returned.
	StreamBlobs(ctx context.Context, ids []plumbing.Hash, max int64, keep bool, fn func(i int, data []byte, checked bool, err error) error) error
}

// Sources are a store's blob sources and the cache of what was read
// through them.
type Sources struct {
	mu    sync.Mutex
	keys  []string
	srcs  []Source
	cache map[plumbing.Hash]*list.Element // of *cached
	lru   list.List                       // most recently used first
	bytes int64
	cap   int64
	limit int64 // the store's: no blob read through a source is larger
	// unopened: sources a resumed session had that could not be opened
	// here (key, and why), named when a blob cannot be read.
	unopened []string
}

type cached struct {
	h    plumbing.Hash
	data []byte
}

// New returns no sources, with a cache of up to half of limit, the
// store's own limit, which no blob read through a source may exceed.
func New(limit int64) *Sources {
	// The cache of blobs read through sources may hold as much as half
	// the store's own limit: memory the session spends, but never more
	// than that, and never what the quotas count (they count a lazy file
	// by its size, loaded or not).
	return &Sources{cache: map[plumbing.Hash]*list.Element{}, cap: limit / 2, limit: limit}
}

// Add adds src, under key (a target's id), to the places blobs are
// read from; a source already under key is replaced. Sources added later
// are tried first: the newest pull is the likeliest to have a blob.
func (x *Sources) Add(key string, src Source) {
	x.mu.Lock()
	defer x.mu.Unlock()
	// New slices every time: readers iterate a copy of the old ones
	// without the lock.
	keys, srcs := []string{key}, []Source{src}
	for i, k := range x.keys {
		if k != key {
			keys, srcs = append(keys, k), append(srcs, x.srcs[i])
		}
	}
	x.keys, x.srcs = keys, srcs
	// A source opened again (git_pull) is no longer unopened.
	x.unopened = slices.DeleteFunc(slices.Clone(x.unopened), func(u string) bool { return strings.HasPrefix(u, key+" (") })
}

// Unopened records that the source key, which the session had, could not
// be opened (why): a blob no source gives is then said to be its.
func (x *Sources) Unopened(key string, why error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.unopened = append(x.unopened, fmt.Sprintf("%s (%v)", key, why))
}

// Keys lists the keys of the sources, newest first.
func (x *Sources) Keys() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]string(nil), x.keys...)
}

// Read returns the content of blob h from the cache, or read through the
// first source that has it (and cached); its error says why no source
// could give it, and what to do.
func (x *Sources) Read(h plumbing.Hash) ([]byte, error) {
	x.mu.Lock()
	if e, ok := x.cache[h]; ok {
		x.lru.MoveToFront(e)
		data := e.Value.(*cached).data
		x.mu.Unlock()
		return data, nil
	}
	keys, srcs, limit := x.keys, x.srcs, x.limit
	failed := readFailure{unopened: x.unopened}
	x.mu.Unlock()
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
	// unopened: the sources that could not be opened when the session
	// resumed
	unopened []string
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
	what := "the one it was pulled from"
	if len(f.unopened) > 0 {
		what = strings.Join(f.unopened, ", ")
	}
	return fmt.Errorf("blob %s: %w: no repository it can be read from is open (%s could not be opened by this server when the session resumed): "+
		"restore that repository and git_pull with no arguments to read from it again (a fleet of servers: mount it at the same path on every server, "+
		"or use a GitHub target), or git_pull the file from another target that has it", h, plumbing.ErrObjectNotFound, what)
}

// put caches data, dropping the least recently used blobs past the cap.
// A blob larger than the cap is not cached: whoever asked keeps it.
func (x *Sources) put(h plumbing.Hash, data []byte) {
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
// does not hold (held) and the cache does not, through the sources that read many at a
// time (BatchSource), in as few reads as they take: what a caller
// about to read many lazy files asks first. It reads no more than the
// cache holds, by the blobs' sizes (sizes[i] is ids[i]'s when sizes is
// not nil: the workspace knows them, and a source may have to read a blob
// to tell), taking ids in order. It reports nothing: a blob it did not read is read when it is asked for.
func (x *Sources) Prefetch(ids []plumbing.Hash, sizes []int64, held func(plumbing.Hash) bool) {
	x.mu.Lock()
	var batchers []BatchSource
	for _, src := range x.srcs {
		if b, ok := src.(BatchSource); ok {
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
		if seen[h] || held(h) {
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
			if n, err = x.Size(h); err != nil {
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

// Size returns blob h's size from the first source that has it.
func (x *Sources) Size(h plumbing.Hash) (int64, error) {
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

// Has checks that blob h can be read now: the cache holds it, or a source
// still has it (nil).
func (x *Sources) Has(h plumbing.Hash) error {
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

// Close closes the sources that hold something open (a local
// repository's packs). Nothing can be read through them after it.
func (x *Sources) Close() {
	x.mu.Lock()
	srcs := x.srcs
	x.mu.Unlock()
	for _, src := range srcs {
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
	}
}

// Bytes is what the cache holds.
func (x *Sources) Bytes() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.bytes
}

// Stream calls fn once for each of ids[rest] (indexes of ids), with its
// content checked against its id, or with why it cannot be read: blobs
// cached at once, the rest through the sources in as few passes as they
// take (a StreamSource streams them; a BatchSource reads them in
// batches; any other source one at a time, as Read). keep and fn are as
// for staging.Store.StreamBlobs.
func (x *Sources) Stream(ctx context.Context, ids []plumbing.Hash, rest []int, keep bool, fn func(i int, data []byte, err error) error) error {
	todo := rest[:0:0]
	for _, i := range rest {
		x.mu.Lock()
		e, ok := x.cache[ids[i]]
		if ok {
			x.lru.MoveToFront(e)
		}
		x.mu.Unlock()
		if ok {
			if err := fn(i, e.Value.(*cached).data, nil); err != nil {
				return err
			}
			continue
		}
		todo = append(todo, i)
	}
	rest = todo
	x.mu.Lock()
	srcs, limit := x.srcs, x.limit
	x.mu.Unlock()
	for _, src := range srcs {
		if len(rest) == 0 {
			return nil
		}
		var next []int
		var err error
		switch src := src.(type) {
		case StreamSource:
			next, err = streamFrom(ctx, src, ids, rest, limit, keep, x, fn)
		case BatchSource:
			next, err = batchFrom(src, ids, rest, keep, x, fn)
		default:
			next, err = rest, nil
		}
		if err != nil {
			return err
		}
		rest = next
	}
	// What no stream or batch answered is read one at a time, through
	// every source, as a read of one file would (and so cached): its
	// error says why no source has it, and what to do.
	for _, i := range rest {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := x.Read(ids[i])
		if err := fn(i, data, err); err != nil {
			return err
		}
	}
	return nil
}

// streamFrom streams ids[rest] from src, answering fn for each it read;
// it returns the indexes src did not have, or could not give, for the
// next source.
func streamFrom(ctx context.Context, src StreamSource, ids []plumbing.Hash, rest []int, limit int64,
	keep bool, x *Sources, fn func(i int, data []byte, err error) error) ([]int, error) {
	want := make([]plumbing.Hash, len(rest))
	for k, i := range rest {
		want[k] = ids[i]
	}
	missed := make([]bool, len(rest))
	err := src.StreamBlobs(ctx, want, limit, keep, func(k int, data []byte, checked bool, err error) error {
		i := rest[k]
		if err == nil && !checked && plumbing.ComputeHash(plumbing.BlobObject, data) != ids[i] {
			// A source is a repository on disk: hostile until checked.
			err = errNotItsID
		}
		if err != nil {
			// Read again alone, through every source: its error then
			// says what to do.
			missed[k] = true
			return nil
		}
		if keep {
			x.put(ids[i], data) // the source gave it a buffer of its own
		}
		return fn(i, data, err)
	})
	if err != nil {
		return nil, err
	}
	var next []int
	for k, m := range missed {
		if m {
			next = append(next, rest[k])
		}
	}
	return next, nil
}

// batchFrom reads ids[rest] from a remote source in batches of
// streamBatch; it returns the indexes the source did not answer.
func batchFrom(src BatchSource, ids []plumbing.Hash, rest []int, keep bool, x *Sources, fn func(i int, data []byte, err error) error) ([]int, error) {
	var next []int
	for len(rest) > 0 {
		part := rest[:min(streamBatch, len(rest))]
		rest = rest[len(part):]
		want := make([]plumbing.Hash, len(part))
		for k, i := range part {
			want[k] = ids[i]
		}
		got, err := src.ReadBlobs(want)
		if err != nil {
			// A batch that failed whole is tried blob by blob later.
			next = append(next, part...)
			continue
		}
		for _, i := range part {
			data, ok := got[ids[i]]
			if !ok || plumbing.ComputeHash(plumbing.BlobObject, data) != ids[i] {
				next = append(next, i)
				continue
			}
			if keep {
				x.put(ids[i], data)
			}
			if err := fn(i, data, nil); err != nil {
				return nil, err
			}
		}
	}
	return next, nil
}

// streamBatch is how many blobs a remote source is asked for at once.
const streamBatch = 256
