// Package resolve turns a name into a place in one of memfs's trees: the
// path guard (internal/pathguard), the deny list, then a walk that follows
// symlinks under a view's rules (the worker's symlink policy, or go-billy's
// conventions for trusted code), never above the tree's root and at most
// 40 hops. It owns the lookup rules; memfs owns the trees, the locks and
// what an operation does with what was found, and is this package's only
// user. The walk reads a tree without locks: the caller holds memfs's lock
// for the live tree, or passes a frozen snapshot's root.
package resolve
