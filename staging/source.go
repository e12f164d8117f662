package staging

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging/blobsrc"
)

// A base's blobs are never copied into the store: the store reads them
// through its sources (package blobsrc) on first use and keeps them in a
// cache it may empty at any time, because they can always be read again.

// BlobSource reads blobs the store does not hold (see blobsrc.Source).
type BlobSource = blobsrc.Source

// BlobBatchSource is a source that reads many blobs for about the cost of
// one (see blobsrc.BatchSource). Store.Prefetch reads through it.
type BlobBatchSource = blobsrc.BatchSource

// BlobStreamSource is a source that reads many blobs in one pass (see
// blobsrc.StreamSource). Store.StreamBlobs reads through it.
type BlobStreamSource = blobsrc.StreamSource

var (
	_ memfs.Loader     = (*Store)(nil)
	_ memfs.Prefetcher = (*Store)(nil)
	_ memfs.Streamer   = (*Store)(nil)
)

// AddSource adds src, under key (a target's id), to the places blobs are
// read from; a source already under key is replaced. Sources added later
// are tried first: the newest pull is the likeliest to have a blob.
func (s *Store) AddSource(key string, src BlobSource) { s.src.Add(key, src) }

// SourceUnopened records that the source key could not be opened (why):
// reads that no source answers name it.
func (s *Store) SourceUnopened(key string, why error) { s.src.Unopened(key, why) }

// Sources lists the keys of the store's blob sources, newest first.
func (s *Store) Sources() []string { return s.src.Keys() }

// LoadBlob returns the content of blob id: the store's own, or read
// through a source (and cached). It implements memfs.Loader: lazy files
// of a workspace read their content through the session's store.
func (s *Store) LoadBlob(id [20]byte) ([]byte, error) { return s.ReadBlob(plumbing.Hash(id)) }

// Prefetch reads ahead, into the cache, the blobs of ids that the store
// neither holds nor has cached, through the sources that read many at a
// time (BlobBatchSource), in as few reads as they take: what a caller
// about to read many lazy files asks first. It reads no more than the
// cache holds, by the blobs' sizes (sizes[i] is ids[i]'s when sizes is
// not nil: the workspace knows them, and a source may have to read a blob
// to tell), taking ids in order. It implements memfs.Prefetcher, and
// reports nothing: a blob it did not read is read when it is asked for.
func (s *Store) Prefetch(ids []plumbing.Hash, sizes []int64) { s.src.Prefetch(ids, sizes, s.Holds) }

// HasBlob checks that blob h can be read now: the store holds it, or a
// source still has it. A push asks before it starts sending a pack, which
// could not be taken back halfway.
func (s *Store) HasBlob(h plumbing.Hash) error {
	if _, ok := s.held(h); ok {
		return nil
	}
	return s.src.Has(h)
}

// CloseSources closes the sources that hold something open (a local
// repository's packs). Lazy files cannot be read after it.
func (s *Store) CloseSources() { s.src.Close() }

// CachedBytes is what the cache of blobs read through sources holds.
func (s *Store) CachedBytes() int64 { return s.src.Bytes() }

// StreamBlobs calls fn once for each of ids, with its content checked
// against its id, or with why it cannot be read: blobs the store holds or
// has cached at once, the rest through the sources in as few passes as
// they take (a local repository streams them; a remote one reads them in
// batches; any other source one at a time). Unless keep, what is read
// this way is not cached, and fn's data is valid only during the call: a
// caller that writes a whole base out (a run's mirror) does not push the
// worker's own files out of the cache. With keep, what is read is cached
// (up to the cache's size) and fn's data stays valid: a search, whose
// next run reads from memory. fn may be called from several goroutines
// at once; its data is shared, never to be modified. An error of fn ends
// the walk and is returned.
func (s *Store) StreamBlobs(ctx context.Context, ids []plumbing.Hash, keep bool, fn func(i int, data []byte, err error) error) error {
	var rest []int // indexes of ids not answered yet
	for i, h := range ids {
		o, ok := s.held(h)
		if !ok {
			rest = append(rest, i)
			continue
		}
		var data []byte
		var err error
		if o.Type() != plumbing.BlobObject {
			err = fmt.Errorf("blob %s: %w (it is a %s)", h, plumbing.ErrObjectNotFound, o.Type())
		} else {
			data, err = ObjectBytes(o)
		}
		if err := fn(i, data, err); err != nil {
			return err
		}
	}
	return s.src.Stream(ctx, ids, rest, keep, fn)
}
