// Package memfs is the worker's filesystem: an in-memory workspace that
// nothing outside the process can see, safe for concurrent use, with one
// guard (internal/pathguard) in front of every path a worker names.
//
// # Views
//
// A Workspace has three faces over one tree:
//
//   - its methods (ReadFile, WriteFile, Edit, ReadDir, Stat, Rename,
//     Symlink, RemoveAll, OpenFile, ...) are the worker's: every path goes
//     through resolve, which applies pathguard.CheckPath (the path guard),
//     the deny list and the symlink policy, in that order, and nothing else
//     lets a worker's path in;
//   - FS is a read-only io/fs view under the same rules, and ResolveIn
//     and WalkVisible the same view of a Snapshot (read without locks);
//   - Billy is a billy.Filesystem for go-git and other trusted code, with
//     go-billy's path conventions (see its documentation).
//
// # Storage
//
// The tree is persistent: a directory holds its entries in an immutable
// sorted map, and a change path-copies from the root. A checkpoint or a
// base is therefore a pointer to a root plus a generation bump ("freeze"):
// O(1) to take, and it costs memory only for what changes afterwards. Every
// change is built as a transaction (txn) and published only after the
// quotas are checked, so an operation that fails changes nothing. Writes
// through an open handle change a file version of the current generation in
// place, so streaming a file costs what it writes.
//
// The tree itself (versions, path copying, comparing and counting trees,
// lazy content) is memfs/internal/tree's, and the lookup rules (the guard,
// the deny list, symlinks under a view's policy) are
// memfs/internal/resolve's; memfs owns the workspace around them: the lock,
// generations, quotas, change tracking, checkpoints and the views.
//
// # Quotas
//
// Limits bound bytes per file, bytes in all, files and directories. The
// tallies count everything the process holds: the live tree plus versions
// that only the base or a checkpoint still reaches, so neither writing in a
// loop nor checkpointing in a loop can grow memory past the quota.
//
// # Change tracking
//
// Every operation records the paths it touched since the base (the state
// Seed installed). Changes compares just those paths between the base and
// now, so its cost follows the number of touched paths, not the size of
// the workspace.
package memfs
