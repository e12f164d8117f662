package staging

import (
	"github.com/airlock-dev/airlock/internal/gitignore"
	"github.com/airlock-dev/airlock/staging/untracked"
)

// Ignored is an untracked file that git's ignore rules exclude, with the
// directory shown in its place (see untracked.Ignored).
type Ignored = untracked.Ignored

// Clean reports whether the workspace holds nothing but what is staged:
// no unstaged change and no ignored file either.
func (st Status) Clean() bool { return len(st.Unstaged) == 0 && len(st.Ignored) == 0 }

// SetExclude gives the area the repository's own exclude patterns: fn
// returns the content of its info/exclude (the local repository the base
// was pulled from), read afresh whenever the rules are applied, as git
// does. fn is called from the area's methods (Status, Stage, DiffUnstaged,
// Ignored) and must not call back into the area. nil: none.
func (a *Area) SetExclude(fn func() []byte) { a.ign.SetExclude(fn) }

// Ignored reports, for each of paths (relative to the area's root), whether
// git would leave it out of a status as an ignored untracked path: it is
// not tracked (not in the last staged commit, or the base) and the ignore
// rules of the live workspace exclude it.
func (a *Area) Ignored(paths []string) []bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]bool, len(paths))
	tip := a.tip().snap
	var c *gitignore.Checker
	for i, p := range paths {
		if _, tracked := tip.Lookup(p); tracked {
			continue
		}
		if c == nil {
			c = a.ign.Checker(a.ws.Snapshot())
		}
		out[i] = c.Ignored(p, false)
	}
	return out
}

// StageReport is what Stage did: the commit, and what the ignore rules
// changed in what it took.
type StageReport struct {
	Commit *Commit
	// Forced lists the ignored files staged because a path named them
	// (the file, or a directory the rules exclude), as `git add -f`.
	Forced []string
	// LeftOut lists the ignored files the paths reach (all of them, with
	// no paths) that were not staged.
	LeftOut []string
}
