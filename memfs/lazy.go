package memfs

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/memfs/internal/tree"
	"github.com/go-git/go-git/v5/plumbing"
)

// A lazy file version is a blob of a base that has not been read: the
// workspace knows its id and size (from the tree and the object's header)
// and reads its content through a Loader when something first needs it.
// A base of 10,000 files a worker never opens costs 10,000 tree entries.
//
// Lazy versions are frozen: nothing changes one in place. A write makes a
// new, ordinary version from the loaded content (File.resize), a rename or
// chmod keeps the lazy content (txn.version). Quotas count a lazy version
// by its size, as if it were loaded: what the worker sees is what counts,
// and a limit does not change meaning with what happens to be cached.

// Prefetcher is a Loader that reads many blobs ahead for about the cost
// of one: a store whose base is on a remote, where each read is a round
// trip (a pull from GitHub).
type Prefetcher interface {
	// Prefetch reads the blobs ids ahead, so that loading them next
	// costs nothing more; sizes, when not nil, are their sizes as the
	// workspace knows them. Best effort: it reports nothing.
	Prefetch(ids []plumbing.Hash, sizes []int64)
}

// Prefetch asks the loaders of the lazy entries among es to read their
// content ahead, together: what a caller about to read many files (a
// search, a mirror for a run) does first, so that a remote base costs a
// round trip for the lot rather than one for each file.
func Prefetch(es []Entry) {
	var ld Prefetcher
	var ids []plumbing.Hash
	var sizes []int64
	for _, e := range es {
		if e.n == nil || e.n.Lazy == nil {
			continue
		}
		// A workspace's lazy files have one loader, the session's
		// store: the first one found is asked for them all.
		if p, ok := e.n.Lazy.From.(Prefetcher); ok {
			if ld == nil {
				ld = p
			}
			ids, sizes = append(ids, plumbing.Hash(e.n.OID)), append(sizes, e.n.Lazy.Size)
		}
	}
	if len(ids) > 1 {
		ld.Prefetch(ids, sizes)
	}
}

// Lazy reports whether the entry's content has yet to be read.
func (e Entry) Lazy() bool { return e.n != nil && e.n.Lazy != nil }

// Content returns the file's content or the symlink's target, reading it
// first when the version is lazy (an error then wraps ErrUnavailable). It
// is shared with the snapshot, without a copy: it must not be modified.
func (e Entry) Content() ([]byte, error) {
	if e.n == nil {
		return nil, nil
	}
	return e.n.Content("read", e.Path)
}

// Same reports whether e and o hold the same mode and content, comparing
// blob ids where both are known rather than bytes (nothing lazy is read
// for it).
func (e Entry) Same(o Entry) bool {
	return e.Mode == o.Mode && e.n != nil && o.n != nil && tree.SameData(e.n, o.n)
}

// Streamer is a Loader that reads many blobs in one pass for far less
// than a read each: a store whose base is a local repository, which git
// streams. LoadEach reads through it.
type Streamer interface {
	// StreamBlobs calls fn once for each of ids, with its content checked
	// against its id or with why it cannot be read, possibly from several
	// goroutines at once; data is valid only during the call unless keep,
	// which also keeps what is read in the loader's cache. An error of fn
	// ends the walk and is returned.
	StreamBlobs(ctx context.Context, ids []plumbing.Hash, keep bool, fn func(i int, data []byte, err error) error) error
}

// LoadEach calls fn once for each of es with its content (a file's, or a
// symlink's target): at once for what is in memory, the lazy rest read
// through their loader together, in as few passes as it takes (a local
// repository's git streams them; a remote one is asked in batches). A
// file that cannot be read is given to fn with the error a read of it
// would have (wrapping ErrUnavailable) and no content: one unreadable
// file does not stop the rest. fn may be called from several goroutines
// at once. Unless keep, a lazy file's data is valid only during the call,
// and is not cached: what writes a whole base out (a run's mirror) leaves
// the cache to the worker's own reads; with keep, it stays valid, and is
// cached as a read of the file would cache it (a search, whose next run
// is then in memory). An error of fn, or ctx's end, ends the walk and is
// returned.
func LoadEach(ctx context.Context, es []Entry, keep bool, fn func(e Entry, data []byte, err error) error) error {
	var lazy []Entry
	var st Streamer
	for _, e := range es {
		if e.n == nil || e.n.Lazy == nil {
			var data []byte
			if e.n != nil {
				data = e.n.Data
			}
			if err := fn(e, data, nil); err != nil {
				return err
			}
			continue
		}
		s, ok := e.n.Lazy.From.(Streamer)
		if ok && (st == nil || s == st) {
			// A workspace's lazy files have one loader, the session's
			// store.
			st = s
			lazy = append(lazy, e)
			continue
		}
		data, err := e.Content()
		if err := fn(e, data, err); err != nil {
			return err
		}
	}
	if len(lazy) == 0 {
		return nil
	}
	ids := make([]plumbing.Hash, len(lazy))
	for i, e := range lazy {
		ids[i] = plumbing.Hash(e.n.OID)
	}
	return st.StreamBlobs(ctx, ids, keep, func(i int, data []byte, err error) error {
		e := lazy[i]
		if err == nil && int64(len(data)) != e.n.Lazy.Size {
			err = fmt.Errorf("it holds %d bytes where its header said %d", len(data), e.n.Lazy.Size)
		}
		if err != nil {
			return fn(e, nil, tree.Unavailable("read", e.Path, e.n.OID, err))
		}
		return fn(e, data, nil)
	})
}
