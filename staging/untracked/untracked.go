package untracked

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/gitignore"
	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs"
)

// ErrNothingToStage: Select found no change to put in a commit (staging
// keeps it under the same name).
var ErrNothingToStage = errors.New("nothing to stage")

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

// Rules is what an Area keeps to apply git's ignore rules: .gitignore
// files already parsed, by blob id, and the repository's own exclude file.
// The zero value has none; its lock is a leaf, never held while a
// .gitignore is loaded or the exclude file read.
type Rules struct {
	mu      sync.Mutex
	parsed  map[plumbing.Hash][]gitignore.Pattern
	exclude func() []byte
}

// maxParsed bounds the parsed .gitignore files an Area keeps; past it the
// cache starts again (a tree with that many distinct ones is rare).
const maxParsed = 1024

// SetExclude gives the rules the repository's own exclude patterns: fn
// returns the content of its info/exclude, read afresh each time Checker
// is called (with the rules' lock not held), as git does. nil: none.
func (r *Rules) SetExclude(fn func() []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exclude = fn
}

// patterns parses data, once for each content.
func (r *Rules) patterns(id plumbing.Hash, data func() ([]byte, error)) []gitignore.Pattern {
	r.mu.Lock()
	ps, ok := r.parsed[id]
	r.mu.Unlock()
	if ok {
		return ps
	}
	b, err := data()
	if err != nil {
		// git skips a .gitignore it cannot read; so does the status.
		return nil
	}
	ps = gitignore.Parse(b)
	r.mu.Lock()
	if r.parsed == nil || len(r.parsed) >= maxParsed {
		r.parsed = map[plumbing.Hash][]gitignore.Pattern{}
	}
	r.parsed[id] = ps
	r.mu.Unlock()
	return ps
}

// Checker returns a checker of the ignore rules of live: its .gitignore
// files, read (and loaded, when lazy) only along the paths it is asked
// about, and the exclude file.
func (r *Rules) Checker(live *memfs.Snapshot) *gitignore.Checker {
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
		return r.patterns(id, e.Content)
	}
	r.mu.Lock()
	fn := r.exclude
	r.mu.Unlock()
	var exclude []gitignore.Pattern
	if fn != nil {
		if data := fn(); len(data) > 0 {
			exclude = r.patterns(plumbing.ComputeHash(plumbing.BlobObject, data), func() ([]byte, error) { return data, nil })
		}
	}
	return gitignore.NewChecker(load, exclude)
}

// Split separates changes into those git shows and the untracked files
// its ignore rules exclude. Only a created file can be ignored: the
// workspace's base is the tip, so anything else is tracked, and git never
// ignores what it tracks. tip is the tip's snapshot; c, when not nil, is
// the checker to use (else one is made if needed) and is returned.
func (r *Rules) Split(live, tip *memfs.Snapshot, changes []memfs.Change, c *gitignore.Checker) ([]memfs.Change, []Ignored, *gitignore.Checker) {
	var shown []memfs.Change
	var ignored []Ignored
	dirs := map[string]string{}
	for _, ch := range changes {
		if ch.Kind != change.Create {
			shown = append(shown, ch)
			continue
		}
		if c == nil {
			c = r.Checker(live)
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

// Select returns the paths of the changes at or under each of paths
// (none, or ".": every change shown); an ignored file is taken only when a
// path names it or a directory the rules exclude.
func Select(c *gitignore.Checker, shown []memfs.Change, ignored []Ignored, paths []string) (selected, forced, leftOut []string, err error) {
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

// listPaths names the first max changes.
func listPaths(cs []memfs.Change, max int) string {
	if len(cs) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, c := range cs {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(cs)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Path)
	}
	return b.String()
}
