// Package mirror is the bridge between a session's workspace (in memory)
// and the directories a run sees on the host, both ways, and nothing
// else: what crosses between them crosses here.
//
// Into the run: a Mirror is the workspace on a host tmpfs, a lower
// directory kept up to date in O(changed) (Sync), under which the jail
// mounts an overlay whose upper directory records what the run changed.
// Back out: Changes reads that upper layer, Apply replays it through the
// worker's view of the workspace (guard, deny list, quotas), Effect names
// what the workspace took as git status would, and Promote moves what it
// took from upper into lower instead of writing it again at the next
// Sync. A run's ~/.cache is the same kind of overlay over the worker's
// cache on disk: MergeLayer applies its upper layer to the cache.
//
// The overlay's two marks (a whiteout, an opaque directory) have one
// definition (overlay.go), which both readers of an upper layer use.
//
// A root server's mirror belongs to the jail's user, who may swap any of
// its directories for a link at any time: every path below the mirror is
// reached from its directory's descriptor by a lookup that follows no
// link (beneath.go).
//
// It imports memfs only: the sandbox imports it (its probe, the cache's
// merge), and the runs package drives it.
package mirror
