package memfs

import "github.com/airlock-dev/airlock/memfs/internal/tree"

// The tree itself (versions, their costs, comparing and counting trees) is
// package tree's; the names below are the parts of it memfs's own callers
// use, under the names they always had.

// Usage counts what a workspace holds in memory.
type Usage = tree.Usage

// Loader reads blobs by id (see tree.Loader).
type Loader = tree.Loader

// Delta is one entry of what differs between two snapshots (see
// tree.Delta).
type Delta = tree.Delta

// Change is a file or symlink that differs from the base.
type Change = tree.Change

// ErrUnavailable: a file's content could not be read from where the
// workspace's base came from (the repository was removed, or its objects
// pruned). The file is listed, its size known, but its bytes are gone.
var ErrUnavailable = tree.ErrUnavailable
