// Package tree is memfs's persistent tree: the versions of files,
// directories and symlinks (Node), what they cost (Usage), and the walks
// that compare and count trees by skipping every subtree two of them share:
// the changes between two trees (DiffNodes, DeltaNodes), what a set of roots
// holds beyond a live tree (HeldCounter), and making separately rebuilt trees
// share what they have in common (Interner). Lazy content (a blob read
// through a Loader on first use) is part of a version, so it is here too.
//
// It knows nothing of workspaces, paths a worker names, locks or quotas:
// package memfs owns those, and is this package's only user. Node's fields
// are exported for memfs alone; the invariants on them (a version older
// than the workspace's generation is frozen, one tree never holds a
// version at two places) are memfs's to keep, and are stated where the
// fields are.
package tree
