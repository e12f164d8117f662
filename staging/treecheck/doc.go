// Package treecheck decides which git trees may leave the sandbox: every
// tree a push sends, and every tree a base is seeded from, is walked as a
// checkout of it would be and refused (CheckTree, CheckTrees) or cleaned
// (CleanTree) when an entry breaks the workspace's path guard, has a mode
// git does not write, is named twice or out of git's order, or is one of
// git's own files (.gitmodules, .gitattributes, in any disguise a
// filesystem reads as one) with content `git fsck --strict` refuses.
//
// It reads objects through Objects, which staging.Store implements; it
// owns the rules (Rule*), the refusals (Refusal, TreeError) and the reading
// of git's own files (GitFileName, CheckGitFile), which staging also uses
// when a file is staged. It imports memfs only for the path guard's rules.
package treecheck

import "github.com/go-git/go-git/v5/plumbing"

// Objects is what a check reads trees and blobs from, and where CleanTree
// writes the trees it rewrites: a staging.Store.
type Objects interface {
	EncodedObject(plumbing.ObjectType, plumbing.Hash) (plumbing.EncodedObject, error)
	BlobSize(plumbing.Hash) (int64, error)
	ReadBlob(plumbing.Hash) ([]byte, error)
	Put(o interface {
		Encode(plumbing.EncodedObject) error
	}) (plumbing.Hash, error)
}

// emptyTree is the tree with no entries, which nothing can be refused in.
var emptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

// join is a tree entry's path under prefix, written as given: path.Join
// would clean a hostile name ("..") into another path.
func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}
