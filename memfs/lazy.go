package memfs

import (
	"context"

	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// Lazy file versions (a blob of the base read on first use) are package
// tree's; these are the names memfs's callers use.

// Entry is a file or symlink of a snapshot.
type Entry = tree.Entry

// Prefetcher is a Loader that reads many blobs ahead for about the cost
// of one (see tree.Prefetcher).
type Prefetcher = tree.Prefetcher

// Streamer is a Loader that reads many blobs in one pass (see
// tree.Streamer).
type Streamer = tree.Streamer

// Prefetch asks the loaders of the lazy entries among es to read their
// content ahead, together: what a caller about to read many files (a
// search, a mirror for a run) does first, so that a remote base costs a
// round trip for the lot rather than one for each file.
func Prefetch(es []Entry) { tree.Prefetch(es) }

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
	return tree.LoadEach(ctx, es, keep, fn)
}
