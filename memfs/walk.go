package memfs

import (
	"github.com/airlock-dev/airlock/memfs/internal/resolve"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// resolve is the one way a worker's path enters the workspace: the path
// guard, the deny list, then a lookup under the worker's symlink policy.
// allowRoot lets "." name the workspace root (for listing and stat).
func (w *Workspace) resolve(op, name string, followLast, allowRoot bool) (resolve.Found, error) {
	return resolve.From(w.deny, w.cur.root, op, name, followLast, allowRoot)
}

// resolveFrom is resolve in the tree at root: the live tree, or a
// snapshot's (which needs no lock).
func (w *Workspace) resolveFrom(root *tree.Node, op, name string, followLast, allowRoot bool) (resolve.Found, error) {
	return resolve.From(w.deny, root, op, name, followLast, allowRoot)
}

// resolveBilly is the lookup of the trusted go-billy view: billy's path
// syntax (leading slash, "." and ".." cleaned lexically), then the component
// rules and the deny list.
func (w *Workspace) resolveBilly(op, name string, followLast bool) (resolve.Found, error) {
	return resolve.ForBilly(w.deny, w.cur.root, op, name, followLast)
}
