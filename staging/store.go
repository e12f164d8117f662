package staging

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging/blobsrc"
)

// Store is an in-memory git object database, safe for concurrent use. It
// implements go-git's storer.EncodedObjectStorer, so go-git's object
// package reads trees and commits from it directly.
//
// Blobs put with PutBlob are not copied: they keep the caller's bytes,
// which must never change (memfs snapshot content never does). The store
// counts every object's size against its limit all the same, so what it
// holds stays bounded whether or not the bytes are shared.
type Store struct {
	mu    sync.RWMutex
	objs  map[plumbing.Hash]plumbing.EncodedObject
	bytes int64
	limit int64
	src   *blobsrc.Sources // blobs read in place, never held (see source.go)
}

var _ storer.EncodedObjectStorer = (*Store)(nil)

// DefaultStoreLimit is the most a store holds unless told otherwise.
const DefaultStoreLimit = 512 << 20

// NewStore returns an empty store that holds at most limit bytes of
// objects (DefaultStoreLimit when limit is zero).
func NewStore(limit int64) *Store {
	if limit <= 0 {
		limit = DefaultStoreLimit
	}
	return &Store{objs: make(map[plumbing.Hash]plumbing.EncodedObject), limit: limit, src: blobsrc.New(limit)}
}

// NewEncodedObject returns an empty object to fill and store.
func (s *Store) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// SetEncodedObject stores o and returns its hash. Storing an object that is
// already there is a no-op.
func (s *Store) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	switch o.Type() {
	case plumbing.BlobObject, plumbing.TreeObject, plumbing.CommitObject, plumbing.TagObject:
	default:
		return plumbing.ZeroHash, fmt.Errorf("store: cannot store an object of type %v", o.Type())
	}
	// Computing the hash here, before the object is shared, keeps go-git's
	// lazily cached MemoryObject.Hash from being written by two readers.
	h := o.Hash()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objs[h]; ok {
		return h, nil
	}
	if s.bytes+o.Size() > s.limit {
		return plumbing.ZeroHash, fmt.Errorf("store: %w: storing a %d-byte %v would take the object store past its %d-byte limit; discard staged commits you no longer need",
			memfs.ErrQuotaExceeded, o.Size(), o.Type(), s.limit)
	}
	s.objs[h] = o
	s.bytes += o.Size()
	return h, nil
}

// Room returns nil when an object of size bytes would fit in the store,
// and the quota error storing it would meet otherwise. Readers check an
// object's declared size with it before inflating anything.
func (s *Store) Room(size int64) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if size < 0 || s.bytes+size > s.limit {
		return fmt.Errorf("store: %w: a %d-byte object would take the object store past its %d-byte limit (%d bytes held)",
			memfs.ErrQuotaExceeded, size, s.limit, s.bytes)
	}
	return nil
}

// PutBlob stores data as a blob without copying it. data must never change.
func (s *Store) PutBlob(data []byte) (plumbing.Hash, error) {
	return s.putBlobID([20]byte{}, data)
}

// putBlobID is PutBlob for data whose blob id the caller knows (zero:
// not known, computed here): what the workspace learned from a tree is
// not hashed again.
func (s *Store) putBlobID(id [20]byte, data []byte) (plumbing.Hash, error) {
	h := plumbing.Hash(id)
	if h.IsZero() {
		h = plumbing.ComputeHash(plumbing.BlobObject, data)
	}
	return s.SetEncodedObject(&rawObject{t: plumbing.BlobObject, h: h, data: data})
}

// Put encodes and stores a go-git object (a tree or a commit).
func (s *Store) Put(o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// EncodedObject returns the object with hash h and type t (or any type for
// plumbing.AnyObject), or plumbing.ErrObjectNotFound.
//
// A blob the store does not hold is read through its sources (see
// AddSource): it is handed out, not stored.
func (s *Store) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, ok := s.held(h)
	if !ok && (t == plumbing.AnyObject || t == plumbing.BlobObject) {
		if data, err := s.src.Read(h); err == nil {
			return &rawObject{t: plumbing.BlobObject, h: h, data: data}, nil
		}
	}
	if !ok || t != plumbing.AnyObject && o.Type() != t {
		return nil, plumbing.ErrObjectNotFound
	}
	return o, nil
}

// held returns the object if the store itself holds it.
func (s *Store) held(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	s.mu.RLock()
	o, ok := s.objs[h]
	s.mu.RUnlock()
	return o, ok
}

// Holds reports whether the store itself holds h (not merely reads it
// through a source).
func (s *Store) Holds(h plumbing.Hash) bool {
	_, ok := s.held(h)
	return ok
}

// IterEncodedObjects iterates over a point-in-time list of the objects of
// type t.
func (s *Store) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	s.mu.RLock()
	list := make([]plumbing.EncodedObject, 0, len(s.objs))
	for _, o := range s.objs {
		if t == plumbing.AnyObject || o.Type() == t {
			list = append(list, o)
		}
	}
	s.mu.RUnlock()
	return storer.NewEncodedObjectSliceIter(list), nil
}

// HasEncodedObject returns nil when the store holds the object (a blob
// its sources have does not count: see BlobSize).
func (s *Store) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := s.held(h); !ok {
		return plumbing.ErrObjectNotFound
	}
	return nil
}

// EncodedObjectSize returns the size of an object the store holds.
func (s *Store) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if o, ok := s.held(h); ok {
		return o.Size(), nil
	}
	return 0, plumbing.ErrObjectNotFound
}

// BlobSize returns the size of blob h, held or in a source; for the
// latter from the object's header, without reading it. The caller knows
// h is a blob (a tree entry says so): a source cannot tell a blob's
// header from another object's without reading it.
func (s *Store) BlobSize(h plumbing.Hash) (int64, error) {
	if o, ok := s.held(h); ok {
		return o.Size(), nil
	}
	return s.src.Size(h)
}

// AddAlternate is not supported: the store never reads from disk.
func (s *Store) AddAlternate(string) error {
	return errors.New("store: alternates are not supported by the in-memory store")
}

// Limit is the most the store holds, in bytes.
func (s *Store) Limit() int64 { return s.limit }

// Bytes is what the store holds, as counted against its limit.
func (s *Store) Bytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.bytes
}

// Len is how many objects the store holds.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.objs)
}

// ReadBlob returns a blob's content. For blobs put with PutBlob it is the
// shared bytes themselves, which must not be modified.
//
// A blob the store does not hold is read through its sources (and cached
// there); their error, not merely "not found", says why one cannot be.
func (s *Store) ReadBlob(h plumbing.Hash) ([]byte, error) {
	o, ok := s.held(h)
	if !ok {
		return s.src.Read(h)
	}
	if o.Type() != plumbing.BlobObject {
		return nil, fmt.Errorf("blob %s: %w (it is a %s)", h, plumbing.ErrObjectNotFound, o.Type())
	}
	return ObjectBytes(o)
}

// rawObject is a read-only object over shared bytes: blobs put with
// PutBlob, and objects put with PutRaw, whose content the store hands out
// without a copy.
type rawObject struct {
	t    plumbing.ObjectType
	h    plumbing.Hash
	data []byte
}

func (b *rawObject) Hash() plumbing.Hash         { return b.h }
func (b *rawObject) Type() plumbing.ObjectType   { return b.t }
func (b *rawObject) SetType(plumbing.ObjectType) {}
func (b *rawObject) Size() int64                 { return int64(len(b.data)) }
func (b *rawObject) SetSize(int64)               {}
func (b *rawObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(b.data)), nil
}
func (b *rawObject) Writer() (io.WriteCloser, error) {
	return nil, errors.New("store: a shared object is read-only")
}

// treeContent returns a tree object's content without copying it when
// the store can.
func (s *Store) treeContent(h plumbing.Hash) ([]byte, error) {
	o, err := s.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	return ObjectBytes(o)
}
