package staging

import (
	"fmt"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/gitignore"
	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs"
)

// Ignored is an untracked file that git's ignore rules exclude: git status
// does not list it as a change and git add -A does not take it, but it is
// in the workspace (as in a working tree) until removed.
type Ignored struct {
	memfs.Change
	// Dir is the untracked directory holding the file that the rules
	// exclude as a whole, shown in its place as `git status
	// --ignored=matching` does ("node_modules"); "" when the file is
	// shown itself.
	Dir string
}

// Clean reports whether the workspace holds nothing but what is staged:
// no unstaged change and no ignored file either.
func (st Status) Clean() bool { return len(st.Unstaged) == 0 && len(st.Ignored) == 0 }

// ignores is what an Area keeps to apply git's ignore rules: .gitignore
// files already parsed, by blob id, and the repository's own exclude file.
type ignores struct {
	mu      sync.Mutex
	parsed  map[plumbing.Hash][]gitignore.Pattern
	exclude func() []byte
}

// maxParsed bounds the parsed .gitignore files an Area keeps; past it the
// cache starts again (a tree with that many distinct ones is rare).
const maxParsed = 1024

// SetExclude gives the area the repository's own exclude patterns: fn
// returns the content of its info/exclude (the local repository the base
// was pulled from), read afresh whenever the rules are applied, as git
// does. fn is called from the area's methods (Status, Stage, DiffUnstaged,
// Ignored) and must not call back into the area. nil: none.
func (a *Area) SetExclude(fn func() []byte) {
	a.ign.mu.Lock()
	defer a.ign.mu.Unlock()
	a.ign.exclude = fn
}

// patterns parses data, once for each content.
func (ig *ignores) patterns(id plumbing.Hash, data func() ([]byte, error)) []gitignore.Pattern {
	ig.mu.Lock()
	ps, ok := ig.parsed[id]
	ig.mu.Unlock()
	if ok {
		return ps
	}
	b, err := data()
	if err != nil {
		// git skips a .gitignore it cannot read; so does the status.
		return nil
	}
	ps = gitignore.Parse(b)
	ig.mu.Lock()
	if ig.parsed == nil || len(ig.parsed) >= maxParsed {
		ig.parsed = map[plumbing.Hash][]gitignore.Pattern{}
	}
	ig.parsed[id] = ps
	ig.mu.Unlock()
	return ps
}

// rules returns a checker of the ignore rules of live: its .gitignore
// files, read (and loaded, when lazy) only along the paths it is asked
// about, and the exclude file.
func (a *Area) rules(live *memfs.Snapshot) *gitignore.Checker {
	load := func(dir string) []gitignore.Pattern {
		p := ".gitignore"
		if dir != "" {
			p = dir + "/" + p
		}
		e, ok := live.Lookup(p)
		// git does not follow a .gitignore that is a symlink.
		if !ok || !e.Mode.IsRegular() {
			return nil
		}
		id := plumbing.Hash(e.ID)
		if id.IsZero() {
			data, err := e.Content()
			if err != nil {
				return nil
			}
			id = plumbing.ComputeHash(plumbing.BlobObject, data)
		}
		return a.ign.patterns(id, e.Content)
	}
	a.ign.mu.Lock()
	fn := a.ign.exclude
	a.ign.mu.Unlock()
	var exclude []gitignore.Pattern
	if fn != nil {
		if data := fn(); len(data) > 0 {
			exclude = a.ign.patterns(plumbing.ComputeHash(plumbing.BlobObject, data), func() ([]byte, error) { return data, nil })
		}
	}
	return gitignore.NewChecker(load, exclude)
}

// split separates changes into those git shows and the untracked files
// its ignore rules exclude. Only a created file can be ignored: the
// workspace's base is the tip, so anything else is tracked, and git never
// ignores what it tracks. tip is the tip's snapshot; c, when not nil, is
// the checker to use (else one is made if needed) and is returned.
func (a *Area) split(live, tip *memfs.Snapshot, changes []memfs.Change, c *gitignore.Checker) ([]memfs.Change, []Ignored, *gitignore.Checker) {
	var shown []memfs.Change
	var ignored []Ignored
	dirs := map[string]string{}
	for _, ch := range changes {
		if ch.Kind != change.Create {
			shown = append(shown, ch)
			continue
		}
		if c == nil {
			c = a.rules(live)
		}
		if !c.Ignored(ch.Path, false) {
			shown = append(shown, ch)
			continue
		}
		ignored = append(ignored, Ignored{Change: ch, Dir: shownDir(c, tip, ch.Path, dirs)})
	}
	return shown, ignored, c
}

// shownDir is the shallowest directory holding p that the rules exclude
// and that holds nothing tracked; "" when there is none. memo keeps the
// answer by p's directory.
func shownDir(c *gitignore.Checker, tip *memfs.Snapshot, p string, memo map[string]string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	dir := p[:i]
	if d, ok := memo[dir]; ok {
		return d
	}
	found := ""
	for j := 0; j <= len(dir); j++ {
		if j < len(dir) && dir[j] != '/' {
			continue
		}
		d := dir[:j]
		if c.Excluded(d) && !tip.IsDir(d) {
			found = d
			break
		}
	}
	memo[dir] = found
	return found
}

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
			c = a.rules(a.ws.Snapshot())
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

// selectChanges returns the paths of the changes at or under each of paths
// (none, or ".": every change shown); an ignored file is taken only when a
// path names it or a directory the rules exclude.
func selectChanges(c *gitignore.Checker, shown []memfs.Change, ignored []Ignored, paths []string) (selected, forced, leftOut []string, err error) {
	whole := len(paths) == 0
	for _, p := range paths {
		whole = whole || p == "." || p == ""
	}
	if whole {
		for _, ch := range shown {
			selected = append(selected, ch.Path)
		}
		for _, g := range ignored {
			leftOut = append(leftOut, g.Path)
		}
		if len(selected) == 0 {
			return nil, nil, nil, fmt.Errorf("%w: there are no unstaged changes%s; write files first, or see git_status", ErrNothingToStage, ignoredNote(leftOut))
		}
		return selected, nil, leftOut, nil
	}
	seen, left := map[string]bool{}, map[string]bool{}
	for _, p := range paths {
		p = strings.TrimSuffix(p, "/")
		if _, err := pathguard.CheckPath(p); err != nil {
			return nil, nil, nil, fmt.Errorf("stage: %w", err)
		}
		under := func(q string) bool { return q == p || strings.HasPrefix(q, p+"/") }
		n := 0
		for _, ch := range shown {
			if under(ch.Path) {
				n++
				if !seen[ch.Path] {
					seen[ch.Path] = true
					selected = append(selected, ch.Path)
				}
			}
		}
		var skipped []string
		for _, g := range ignored {
			switch {
			case !under(g.Path):
			case g.Path == p || c.Excluded(p):
				// Named, or under a directory named that is
				// ignored as a whole: git add -f.
				n++
				if !seen[g.Path] {
					seen[g.Path] = true
					selected = append(selected, g.Path)
					forced = append(forced, g.Path)
				}
			default:
				skipped = append(skipped, g.Path)
				left[g.Path] = true
			}
		}
		if n == 0 {
			if len(skipped) > 0 {
				return nil, nil, nil, fmt.Errorf("%w: no unstaged change at or under %q: the %d untracked files there are ignored (.gitignore), such as %s; name a file itself to stage it anyway",
					ErrNothingToStage, p, len(skipped), skipped[0])
			}
			return nil, nil, nil, fmt.Errorf("%w: no unstaged change at or under %q; unstaged: %s", ErrNothingToStage, p, listPaths(shown, 10))
		}
	}
	for _, g := range ignored {
		if left[g.Path] && !seen[g.Path] {
			leftOut = append(leftOut, g.Path)
		}
	}
	return selected, forced, leftOut, nil
}

// ignoredNote says that ignored files are not changes, when there are any.
func ignoredNote(ignored []string) string {
	if len(ignored) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d untracked files are ignored by .gitignore, such as %s: name one in files to stage it anyway; git_status ignored=true lists them)", len(ignored), ignored[0])
}
