package tree

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"
)

// Prefetcher is a Loader that reads many blobs ahead for about the cost
// of one: a store whose base is on a remote, where each read is a round
// trip (a pull from GitHub).
type Prefetcher interface {
	// Prefetch reads the blobs ids ahead, so that loading them next
	// costs nothing more; sizes, when not nil, are their sizes as the
	// workspace knows them. Best effort: it reports nothing.
	Prefetch(ids []plumbing.Hash, sizes []int64)
}

// Prefetch is memfs.Prefetch: see there.
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
	return e.Mode == o.Mode && e.n != nil && o.n != nil && SameData(e.n, o.n)
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

// LoadEach is memfs.LoadEach: see there.
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
			return fn(e, nil, Unavailable("read", e.Path, e.n.OID, err))
		}
		return fn(e, data, nil)
	})
}

// Entry is a file or symlink of a snapshot.
type Entry struct {
	Path string
	// Mode is the permission bits of a regular file (0o644, 0o755, ...) or
	// fs.ModeSymlink|0o777 for a symlink.
	Mode fs.FileMode
	// Size is the length of the content (see Content).
	Size int64
	// ID is the content's git blob id when known (see SeedFile.ID); zero
	// when not. A lazy entry always has it.
	ID [20]byte

	n *Node
}

func EntryOf(p string, n *Node) Entry {
	return Entry{Path: p, Mode: n.Mode(), Size: n.Size(), ID: n.OID, n: n}
}

func WalkEntries(n *Node, prefix string, fn func(Entry) error) error {
	for it := n.Kids.Iterator(); !it.Done(); {
		name, c, _ := it.Next()
		p := name
		if prefix != "" {
			p = prefix + "/" + name
		}
		var err error
		if c.Kind == KindDir {
			err = WalkEntries(c, p, fn)
		} else {
			err = fn(EntryOf(p, c))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
