// Package rawtree reads and writes git tree objects as bytes: an Index
// locates each entry of a tree's encoded content (no name copied, no
// entry decoded), Find looks one up by binary search in git's order, and
// Splice writes the tree with entries dropped and others put in, copying
// the unchanged ones as runs of bytes. A change to a wide directory thus
// costs one scan and one copy of its bytes, not a decoded entry per name:
// what keeps staging's Stage proportional to what changed.
//
// It imports only go-git's plumbing; staging's tree edits (tree.go) are
// its one user. Parse checks every entry is well formed (ErrBadTree).
package rawtree
