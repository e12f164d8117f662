package gitignore

import "strings"

// Loader returns the patterns of the .gitignore file in dir ("" for the
// repository's root), nil when it has none. A Checker calls it at most once
// a directory, and only for directories the paths it is asked about pass
// through that are not excluded themselves.
type Loader func(dir string) []Pattern

// Checker answers which paths of one repository the ignore rules exclude.
// It remembers what it learnt of each directory, so checking many paths
// of one directory costs one descent. It is not safe for concurrent use:
// make one for each pass over a tree (the tree's .gitignore files may
// change between passes).
type Checker struct {
	load    Loader
	exclude *List
	dirs    map[string]*dirState
}

// dirState is what the descent knows of one directory: the lists in force
// inside it (the root's first), and whether it is excluded, by a pattern
// of its own or with a parent.
type dirState struct {
	lists    []*List
	excluded bool
}

// NewChecker returns a checker that reads .gitignore files through load
// and applies exclude (the repository's info/exclude, nil for none) after
// them.
func NewChecker(load Loader, exclude []Pattern) *Checker {
	c := &Checker{load: load, dirs: map[string]*dirState{}}
	if len(exclude) > 0 {
		c.exclude = &List{Patterns: exclude}
	}
	return c
}

// Ignored reports whether the rules exclude path (a slash-separated path
// relative to the repository's root; dir: it is a directory). It does not
// know what is tracked: git never ignores a tracked file.
func (c *Checker) Ignored(path string, dir bool) bool {
	parent, _ := split(path)
	d := c.dir(parent)
	return d.excluded || c.match(d.lists, path, dir)
}

// Excluded reports whether the directory dir is excluded, by its own
// pattern or because one holding it is: nothing below it can be
// re-included. The root never is.
func (c *Checker) Excluded(dir string) bool { return c.dir(dir).excluded }

func (c *Checker) dir(d string) *dirState {
	if s, ok := c.dirs[d]; ok {
		return s
	}
	s := &dirState{}
	if d == "" {
		if ps := c.load(""); len(ps) > 0 {
			s.lists = []*List{{Patterns: ps}}
		}
	} else {
		parent, _ := split(d)
		ps := c.dir(parent)
		switch {
		case ps.excluded:
			s = ps
		case c.match(ps.lists, d, true):
			// Judged by the lists above it: its own .gitignore is
			// never read.
			s = &dirState{lists: ps.lists, excluded: true}
		default:
			s.lists = ps.lists
			if pats := c.load(d); len(pats) > 0 {
				s.lists = append(ps.lists[:len(ps.lists):len(ps.lists)], &List{Dir: d, Patterns: pats})
			}
		}
	}
	c.dirs[d] = s
	return s
}

// match applies lists, the deepest first, then the exclude file: the
// first that has a matching pattern decides, by its last one.
func (c *Checker) match(lists []*List, path string, dir bool) bool {
	_, name := split(path)
	for i := len(lists) - 1; i >= 0; i-- {
		if p := lists[i].last(path, name, dir); p != nil {
			return !p.negative
		}
	}
	if c.exclude != nil {
		if p := c.exclude.last(path, name, dir); p != nil {
			return !p.negative
		}
	}
	return false
}

// split returns path's directory ("" at the root) and last component.
func split(path string) (string, string) {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i], path[i+1:]
	}
	return "", path
}
