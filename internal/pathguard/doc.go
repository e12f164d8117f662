// Package pathguard owns which names a worker may use: the path guard
// (CheckPath: one spelling of every path, no ".git" in any disguise, no
// control or invisible characters, no Windows device names), the symlink
// policy that needs no tree (CheckSymlink), and the deny list of files that
// usually hold secrets (DenyList). Its refusals are *Error values naming a
// Rule and wrapping one of three sentinels.
//
// It is a package of its own because three rooms apply the same rules: the
// in-memory workspace (memfs) on every operation, staging on every path and
// link it commits, and targets before anything is written to the host's
// disk. None of them has to import another to check a name.
package pathguard
