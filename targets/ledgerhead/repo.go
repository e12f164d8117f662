package ledgerhead

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// WriteCommit writes h's blob, tree and commit (parent: parent,
// unless zero) into r's object database.
func WriteCommit(r *git.Repository, h Head, parent plumbing.Hash) (plumbing.Hash, error) {
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) (plumbing.Hash, error) {
		obj := r.Storer.NewEncodedObject()
		if err := o.Encode(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		return r.Storer.SetEncodedObject(obj)
	}
	blob := r.Storer.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, err := blob.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write([]byte(h.Text())); err != nil {
		return plumbing.ZeroHash, err
	}
	w.Close()
	blobID, err := r.Storer.SetEncodedObject(blob)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	treeID, err := put(&object.Tree{Entries: []object.TreeEntry{{Name: File, Mode: filemode.Regular, Hash: blobID}}})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: "airlock", Email: "airlock@localhost", When: h.Time.UTC()}
	c := &object.Commit{Author: sig, Committer: sig, Message: h.Message(), TreeHash: treeID}
	if _, err := r.CommitObject(parent); err == nil {
		// Only a commit can be a parent: a ref someone pointed at a
		// blob is replaced, not built on.
		c.ParentHashes = []plumbing.Hash{parent}
	}
	return put(c)
}

// Read reads the head at ref in r, and the commit the ref holds (zero
// when there is none).
func Read(r *git.Repository, ref string) (Head, plumbing.Hash, bool, error) {
	rf, err := r.Reference(plumbing.ReferenceName(ref), false)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return Head{}, plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return Head{}, plumbing.ZeroHash, false, err
	}
	if rf.Type() == plumbing.SymbolicReference {
		return Head{}, plumbing.ZeroHash, false, fmt.Errorf("%w: %s is a symbolic ref to %s", ErrSymbolicRef, ref, rf.Target())
	}
	c, err := r.CommitObject(rf.Hash())
	if err != nil {
		return Head{}, rf.Hash(), false, fmt.Errorf("%w: %s holds %s: %v", ErrNotHead, ref, rf.Hash(), err)
	}
	h, err := Parse(c.Message)
	return h, rf.Hash(), err == nil, err
}
