// Package worktree writes into the working tree of a repository on this
// machine, where a push to a checked-out branch puts its files: never
// through a symlink in the tree (each directory opened beneath its parent
// with O_NOFOLLOW), never at a path the workspace's guard refuses, new
// content renamed into place from a private temporary directory (Writer).
// It says what the tree holds at a path as git sees it (Writer.Stat,
// Entry), without following a link and without opening anything but a
// regular file, so that a roll-forward writes only where the tree is as
// the push left it (Entry.Holds).
//
// targets' roll-forward (rollforward.go) is its one caller; it imports
// memfs for the guard. On systems without the *at calls it writes
// nothing and says so.
package worktree
