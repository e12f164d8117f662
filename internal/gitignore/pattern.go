package gitignore

import (
	"bytes"
	"strings"
)

// Pattern is one pattern of an ignore file.
type Pattern struct {
	// Line is its line in the file (1 for the first), Text the line as
	// read (without a trailing CR or the spaces dropped), for messages.
	Line int
	Text string

	negative bool
	dirOnly  bool
	// base: no slash but a trailing one, so it matches a name at any
	// depth (git's PATTERN_FLAG_NODIR).
	base bool
	body string // without "!", the trailing "/" and, for a path, the leading one
	// A base pattern is matched whole against a name; a path pattern's
	// literal prefix (up to its first special byte) is compared first
	// and the rest matched on its own, as git's match_pathname does.
	prefix string
	rest   wildcard
}

// Negative reports whether the pattern re-includes what it matches ("!").
func (p *Pattern) Negative() bool { return p.negative }

// Bounds on what one file contributes, where git has none: a repository is
// hostile until checked, and every check costs patterns times path. No
// real .gitignore comes near them (the largest of GitHub's templates has a
// few hundred lines).
const (
	maxPatterns   = 10_000 // the first ones are read, the rest ignored
	maxPatternLen = 4096   // a longer line is skipped: longer than any path
)

// Parse reads an ignore file as git does: one pattern a line, comments and
// empty lines skipped, trailing spaces dropped unless escaped, a CR before
// the newline and a UTF-8 byte order mark at the start ignored.
func Parse(data []byte) []Pattern {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var out []Pattern
	for n := 1; len(data) > 0 && len(out) < maxPatterns; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		// git reads each line as a C string: a NUL ends it.
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line = line[:i]
		}
		if len(line) > maxPatternLen {
			continue
		}
		if p, ok := parseLine(trimTrailingSpaces(string(line))); ok {
			p.Line = n
			out = append(out, p)
		}
	}
	return out
}

// trimTrailingSpaces drops the spaces that end s, unless a backslash
// quotes the first of them; tabs stay.
func trimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i == len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// parseLine makes a pattern of one line; ok is false for a line that can
// match nothing (empty once "!" and the trailing "/" are off).
func parseLine(text string) (Pattern, bool) {
	p := Pattern{Text: text}
	s := text
	if strings.HasPrefix(s, "!") {
		p.negative = true
		s = s[1:]
	}
	if strings.HasSuffix(s, "/") {
		p.dirOnly = true
		s = s[:len(s)-1]
	}
	if s == "" {
		return p, false
	}
	p.base = !strings.Contains(s, "/")
	if p.base {
		p.body = s
		p.rest = compileWild(s)
		return p, true
	}
	s = strings.TrimPrefix(s, "/")
	p.body = s
	lit := strings.IndexAny(s, special)
	if lit < 0 {
		lit = len(s)
	}
	p.prefix = s[:lit]
	p.rest = compileWild(s[lit:])
	return p, true
}

// matches reports whether the pattern matches a path: rel is the path
// relative to the directory of the pattern's file, name its last
// component, dir whether it is a directory.
func (p *Pattern) matches(rel, name string, dir bool) bool {
	if p.dirOnly && !dir {
		return false
	}
	if p.base {
		return p.rest.match(name)
	}
	if !strings.HasPrefix(rel, p.prefix) {
		return false
	}
	return p.rest.match(rel[len(p.prefix):])
}

// List is the patterns of one file, with the directory they apply in ("",
// the repository's root, or a slash-separated path without a trailing
// slash).
type List struct {
	Dir      string
	Patterns []Pattern
}

// last returns the last pattern of l that matches path (a path relative to
// the repository's root, below l.Dir), or nil.
func (l *List) last(path, name string, dir bool) *Pattern {
	rel := path
	if l.Dir != "" {
		rel = path[len(l.Dir)+1:]
	}
	for i := len(l.Patterns) - 1; i >= 0; i-- {
		if p := &l.Patterns[i]; p.matches(rel, name, dir) {
			return p
		}
	}
	return nil
}
