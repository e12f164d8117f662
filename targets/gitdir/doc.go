// Package gitdir reads a local repository's layout from git's own files,
// without running git: which repository a path is in and of which kind,
// its git and common directories, the branch its HEAD names (ProbeLocal,
// Probe, ProbeHead), its refs read with go-git (Probe.Heads,
// BranchNames), and its common directory from a .git file or a linked
// worktree's commondir (CommonDir).
//
// A worker's repositories are probed when airlock starts (session's
// worker check), where a git process would cost more than the check;
// targets.Local reads its layout from it when it opens, and asks git
// only where these files are not as expected. It imports only go-git.
package gitdir
