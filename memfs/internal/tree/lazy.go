package tree

// A lazy file version is a blob of a base that has not been read: the
// workspace knows its id and size (from the tree and the object's header)
// and reads its content through a Loader when something first needs it.
// A base of 10,000 files a worker never opens costs 10,000 tree entries.
//
// Lazy versions are frozen: nothing changes one in place. A write makes a
// new, ordinary version from the loaded content (File.resize), a rename or
// chmod keeps the lazy content (Txn.Version). Quotas count a lazy version
// by its size, as if it were loaded: what the worker sees is what counts,
// and a limit does not change meaning with what happens to be cached.

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/go-git/go-git/v5/plumbing"
)

// Loader reads blobs by id: a staging.Store, which reads through to the
// object database of the repository the base came from.
type Loader interface {
	// LoadBlob returns the content of the blob with id id, checked
	// against it. The bytes are shared: the caller never modifies them.
	LoadBlob(id [20]byte) ([]byte, error)
}

// ErrUnavailable: a file's content could not be read from where the
// workspace's base came from (the repository was removed, or its objects
// pruned). The file is listed, its size known, but its bytes are gone.
var ErrUnavailable = errors.New("content unavailable")

// Lazy is what a lazy version holds instead of its content.
type Lazy struct {
	From Loader
	Size int64
}

// Size is the length of a file's content or a link's target.
func (n *Node) Size() int64 {
	if n.Lazy != nil {
		return n.Lazy.Size
	}
	return int64(len(n.Data))
}

// Content returns a file's content, loading it when the version is lazy;
// op and name are for the error. The bytes are shared: they must not be
// modified.
func (n *Node) Content(op, name string) ([]byte, error) {
	if n.Lazy == nil {
		return n.Data, nil
	}
	b, err := n.Lazy.From.LoadBlob(n.OID)
	if err == nil && int64(len(b)) != n.Lazy.Size {
		err = fmt.Errorf("it holds %d bytes where its header said %d", len(b), n.Lazy.Size)
	}
	if err != nil {
		return nil, Unavailable(op, name, n.OID, err)
	}
	return b, nil
}

// Unavailable is the error for a lazy file whose content could not be
// read.
func Unavailable(op, name string, oid [20]byte, err error) error {
	return &pathguard.Error{Op: op, Path: name, Err: ErrUnavailable, Detail: err.Error()}
}

// SameData reports whether a and b, both files or both links, hold the
// same bytes. Known blob ids are compared instead of content, so a lazy
// version is never loaded to be compared with another lazy one, and only
// the loaded side is hashed when one of them is lazy.
func SameData(a, b *Node) bool {
	var zero [20]byte
	switch {
	case a.OID != zero && b.OID != zero:
		return a.OID == b.OID
	case a.Lazy == nil && b.Lazy == nil:
		return bytes.Equal(a.Data, b.Data)
	case a.Size() != b.Size():
		return false
	case a.Lazy != nil:
		return a.OID == BlobID(b.Data)
	default:
		return b.OID == BlobID(a.Data)
	}
}

// BlobID is data's git blob id.
func BlobID(data []byte) [20]byte { return plumbing.ComputeHash(plumbing.BlobObject, data) }
