// Package staging is the sandbox's git side: staged commits as real git
// objects, held in memory, built from the workspace's changes.
//
// A Store holds git objects in memory behind one lock (it implements
// go-git's object storer interfaces, with a byte limit). An Area ties a
// memfs.Workspace to a Store: its base is the commit the workspace was
// seeded from (SeedFrom), Status lists the staged commits and the unstaged
// changes in time proportional to what changed, and Stage turns changes
// into a commit on top of the chain, rebuilding only the trees along
// changed paths. Every path is checked again by the workspace's guard, so
// no tree that `git fsck --strict` would refuse is ever built.
//
// Commits are deterministic: the same parent, tree, author, committer,
// times and message give the same SHA, so a target (GitHub's Git Data API
// included) can make the exact commit that was reviewed.
//
// Discard, DiscardAll and Reset undo at three levels; Amend replaces the
// latest staged commit in place (recording it in Commit.Replaces, so a
// re-review can say a rejected commit was replaced, not buried); Pick makes a commit
// of some files of a staged one (the reviewer's "pick files"); Rebase moves
// the chain onto a new base when the changed paths do not overlap, and
// reports the overlap otherwise. DiffPatch and friends print unified diffs
// byte for byte as git does (see patch and internal/linediff); DiffTrees
// compares any two trees as data.
//
// Parts it delegates: treecheck (which trees may leave), blobsrc (a base's
// blobs read where they are), rawtree (trees as bytes), commitmeta (message
// and signatures), patch (tree diffs and the patch model), untracked
// (git's ignore rules on the workspace's changes), internal/linediff
// (git's diff format).
package staging
