package staging

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/staging/treecheck"
)

// The tree checks are treecheck's; these names stay here for the callers
// that know them as staging's (targets, session).

// Refusal is one entry of a tree that may not leave the sandbox, and why.
type Refusal = treecheck.Refusal

// CheckTrees refuses the first of trees that holds an entry that may not
// leave the sandbox (see treecheck.CheckTrees).
func CheckTrees(s *Store, trees ...plumbing.Hash) error { return treecheck.CheckTrees(s, trees...) }

// CleanTree returns tree without the entries CheckTree would refuse, and
// those entries (see treecheck.CleanTree).
func CleanTree(s *Store, tree plumbing.Hash) (plumbing.Hash, []Refusal, error) {
	return treecheck.CleanTree(s, tree)
}

// CheckReads reports whether CheckTree reads the content of an entry named
// name with mode m (see treecheck.CheckReads).
func CheckReads(name string, m filemode.FileMode) bool { return treecheck.CheckReads(name, m) }
