// Package runcache keeps a worker's toolchain caches (Go's build and
// module caches, pip, npm, cargo, ccache: whatever its commands write under
// ~/.cache) on disk between runs, servers and sessions of the same worker.
//
// Each worker has a directory of its own under airlock's state directory,
// named by a hash of the worker's key (its file, or for the default worker
// its repository):
//
//	STATE/cache/ID/meta.json  which worker it is for
//	STATE/cache/ID/lock       flock(2)ed shared by every run in flight, and
//	                          exclusively to evict or clear
//	STATE/cache/ID/home/      what a run sees at ~/.cache (owned by the
//	                          jail's host user, 0700)
//	STATE/cache/ID/trash-*    evicted entries on their way out
//	STATE/cache/ID/stamps.json  the times of the worker's workspace files
//	                          (see Stamp), out of the runs' reach
//
// The cache is bounded by a size the operator sets. Accounting walks the
// cache, so it never happens on a run's path: after a run ends, in the
// background, at most once a minute. Eviction removes whole top-level
// entries of home (one tool's cache each: go-build, go-mod, pip, npm,
// cargo, ...), least recently used first (by the newest access or change
// time of any file in it), and only under the exclusive lock, so never
// under a running build; an entry is moved into the trash at once and
// deleted after the lock is released.
//
// Whole entries rather than single files, because a tool's cache is
// consistent only as a whole: cargo trusts an extracted crate by a marker
// file, Go trusts an extracted module directory, npm's index names content
// files. Removing a whole tool's cache leaves that tool where it would be on
// a new machine, which every tool handles; removing single files can leave
// a half tree the tool trusts and builds wrongly from.
package runcache
