package transfer

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ObjectReader is what CopyCommit reads objects from: a pack fetched into
// memory, or a repository through git (gitread.Source.Objects). One whose objects'
// sizes can be read without their content (EncodedObjectSize) is asked
// first.
type ObjectReader interface {
	EncodedObject(plumbing.ObjectType, plumbing.Hash) (plumbing.EncodedObject, error)
}

// CopyCommit copies commit head from src into store, with every tree of it
// and, with blobs, the blobs at or under paths (all blobs when paths is
// empty). The blobs the tree check reads are always copied.
func CopyCommit(ctx context.Context, src ObjectReader, head plumbing.Hash, paths []string, blobs bool, store *staging.Store) error {
	cp := copier{src: src, store: store, paths: paths, blobs: blobs}
	if err := cp.object(head, ""); err != nil {
		return err
	}
	c, err := object.GetCommit(store, head)
	if err != nil {
		return err
	}
	return cp.tree(ctx, c.TreeHash, "")
}

// copier is one CopyCommit: where from, where to, and which blobs.
type copier struct {
	src   ObjectReader
	store *staging.Store
	paths []string
	blobs bool
}

// object copies object h (at path at, for messages), unless the store
// holds it.
func (cp copier) object(h plumbing.Hash, at string) error {
	src, store := cp.src, cp.store
	if store.HasEncodedObject(h) == nil {
		return nil
	}
	// The declared size is checked before anything is inflated: a
	// small pack may hold one object that inflates to gigabytes. (go-git
	// reads a loose object whole when asked for it, so its size comes
	// from its header first.)
	if sz, ok := src.(interface {
		EncodedObjectSize(plumbing.Hash) (int64, error)
	}); ok {
		if n, err := sz.EncodedObjectSize(h); err == nil {
			if err := store.Room(n); err != nil {
				return fmt.Errorf("%w (object %s at %q): %w; pull fewer paths, or raise the sandbox's limits", ErrTooLarge, shortid.Hash(h), OrRoot(at), err)
			}
		}
	}
	o, err := src.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return fmt.Errorf("reading object %s: %w", h, err)
	}
	if err := store.Room(o.Size()); err != nil {
		return fmt.Errorf("%w (%s %s at %q): %w; pull fewer paths, or raise the sandbox's limits", ErrTooLarge, o.Type(), shortid.Hash(h), OrRoot(at), err)
	}
	rd, err := o.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	data := make([]byte, o.Size())
	if _, err := io.ReadFull(rd, data); err != nil {
		return err
	}
	if o.Type() == plumbing.BlobObject {
		_, err = store.PutBlob(data)
		return err
	}
	m := store.NewEncodedObject()
	m.SetType(o.Type())
	w, _ := m.Writer()
	w.Write(data)
	w.Close()
	_, err = store.SetEncodedObject(m)
	return err
}

// wants reports whether the blob at path p is to be copied.
func (cp copier) wants(p string) bool {
	if !cp.blobs {
		return false
	}
	if len(cp.paths) == 0 {
		return true
	}
	for _, q := range cp.paths {
		q = strings.TrimSuffix(q, "/")
		if q == "" || q == "." || p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

// tree copies the tree at prefix, the trees under it and the blobs it
// wants.
func (cp copier) tree(ctx context.Context, tree plumbing.Hash, prefix string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(prefix) > pathguard.MaxPathBytes {
		// Nothing this deep can reach the workspace or leave the
		// sandbox (the tree check drops it), so it is not read:
		// a hostile chain of directories costs one path's length.
		return nil
	}
	if err := cp.object(tree, prefix); err != nil {
		return err
	}
	t, err := object.GetTree(cp.store, tree)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		p := e.Name
		if prefix != "" {
			p = prefix + "/" + e.Name
		}
		switch {
		case e.Mode == filemode.Dir:
			if err := cp.tree(ctx, e.Hash, p); err != nil {
				return err
			}
		case e.Mode == filemode.Submodule:
		case cp.wants(p) || staging.CheckReads(e.Name, e.Mode):
			if err := cp.object(e.Hash, p); err != nil {
				return err
			}
		}
	}
	return nil
}
