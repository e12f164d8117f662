// Package untracked applies git's ignore rules to a workspace's changes,
// as git status and git add do: which created files the rules exclude
// (Rules.Split, with the directory `git status --ignored=matching` shows
// in their place), and what a list of paths selects of the changes
// (Select: an ignored file only when a path names it or a directory the
// rules exclude, as `git add -f`).
//
// Rules keeps each .gitignore parsed once, by blob id, and reads the
// repository's info/exclude afresh each time, as git does; its lock is a
// leaf. Parsing and matching are internal/gitignore's; this package knows
// memfs snapshots and changes, not staging's commits. staging.Area holds
// one Rules, and staging keeps the names Ignored and ErrNothingToStage.
package untracked
