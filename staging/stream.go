package staging

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
)

// BlobStreamSource is a source that reads many blobs in one pass for far
// less than a read each: a local repository, whose git streams them one
// after another. Store.StreamBlobs reads through it.
type BlobStreamSource interface {
	BlobSource
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

var _ memfs.Streamer = (*Store)(nil)

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
	x := &s.src
	var rest []int // indexes of ids not answered yet
	for i, h := range ids {
		if o, ok := s.held(h); ok {
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
			continue
		}
		x.mu.Lock()
		e, ok := x.cache[h]
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
		rest = append(rest, i)
	}
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
		case BlobStreamSource:
			next, err = streamFrom(ctx, src, ids, rest, limit, keep, x, fn)
		case BlobBatchSource:
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
		data, err := x.read(ids[i])
		if err := fn(i, data, err); err != nil {
			return err
		}
	}
	return nil
}

// streamFrom streams ids[rest] from src, answering fn for each it read;
// it returns the indexes src did not have, or could not give, for the
// next source.
func streamFrom(ctx context.Context, src BlobStreamSource, ids []plumbing.Hash, rest []int, limit int64,
	keep bool, x *sources, fn func(i int, data []byte, err error) error) ([]int, error) {
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
func batchFrom(src BlobBatchSource, ids []plumbing.Hash, rest []int, keep bool, x *sources, fn func(i int, data []byte, err error) error) ([]int, error) {
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
