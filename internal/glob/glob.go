package glob

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// MaxLen bounds a pattern's length in bytes.
const MaxLen = 1024

// ErrBadPattern is wrapped by every error Compile returns.
var ErrBadPattern = errors.New("bad glob pattern")

// Pattern is a compiled glob. It is immutable and safe for concurrent use.
type Pattern struct {
	segs  []segment
	stars int // how many segments are "**"
}

// segment matches one path component. Most segments are a literal, a
// prefix ("id_rsa*") or a suffix ("*.pem"); only the rest pay for
// path.Match, which is itself linear in the component for one segment.
type segment struct {
	kind kind
	s    string
}

type kind uint8

const (
	literal kind = iota
	prefix
	suffix
	general
	anyDirs // "**"
)

const meta = `*?[\`

// Compile splits pattern at "/" and compiles each segment. Empty segments
// (a leading, doubled or trailing slash) are skipped: callers that give them
// a meaning strip them first.
func Compile(pattern string) (*Pattern, error) {
	if len(pattern) > MaxLen {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d allowed; use a shorter pattern", ErrBadPattern, len(pattern), MaxLen)
	}
	var parts []string
	for _, s := range strings.Split(pattern, "/") {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return CompileSegments(parts)
}

// CompileSegments compiles a pattern already split into segments (the deny
// list normalises each segment before compiling it). A segment in which
// "**" is not the whole segment matches as "*" would.
func CompileSegments(parts []string) (*Pattern, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: empty pattern", ErrBadPattern)
	}
	n := 0
	for _, s := range parts {
		n += len(s) + 1
	}
	if n-1 > MaxLen {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d allowed; use a shorter pattern", ErrBadPattern, n-1, MaxLen)
	}
	p := &Pattern{segs: make([]segment, 0, len(parts))}
	for _, s := range parts {
		if s == "**" {
			// Consecutive "**" mean what one does; keep the table small.
			if len(p.segs) > 0 && p.segs[len(p.segs)-1].kind == anyDirs {
				continue
			}
			p.segs = append(p.segs, segment{kind: anyDirs})
			p.stars++
			continue
		}
		for strings.Contains(s, "**") {
			s = strings.ReplaceAll(s, "**", "*")
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("%w: segment %q: %v", ErrBadPattern, s, err)
		}
		p.segs = append(p.segs, compileSegment(s))
	}
	return p, nil
}

func compileSegment(s string) segment {
	switch {
	case !strings.ContainsAny(s, meta):
		return segment{kind: literal, s: s}
	case strings.HasSuffix(s, "*") && !strings.ContainsAny(s[:len(s)-1], meta):
		return segment{kind: prefix, s: s[:len(s)-1]}
	case strings.HasPrefix(s, "*") && !strings.ContainsAny(s[1:], meta):
		return segment{kind: suffix, s: s[1:]}
	}
	return segment{kind: general, s: s}
}

func (g segment) match(c string) bool {
	switch g.kind {
	case literal:
		return c == g.s
	case prefix:
		return strings.HasPrefix(c, g.s)
	case suffix:
		return strings.HasSuffix(c, g.s)
	case general:
		ok, _ := path.Match(g.s, c)
		return ok
	}
	return true
}

// Single reports whether the pattern is one segment other than "**": one
// that can only ever match one component.
func (p *Pattern) Single() bool {
	return len(p.segs) == 1 && p.segs[0].kind != anyDirs
}

// MatchName matches a single-segment pattern against one name. It reports
// false for any other pattern.
func (p *Pattern) MatchName(name string) bool {
	return p.Single() && p.segs[0].match(name)
}

// Match reports whether the pattern matches the whole path comps.
func (p *Pattern) Match(comps []string) bool {
	// A last segment other than "**" must match the last name: most paths
	// fail here, without the table (a walk asks this of every file).
	if last := p.segs[len(p.segs)-1]; last.kind != anyDirs && (len(comps) == 0 || !last.match(comps[len(comps)-1])) {
		return false
	}
	var buf [2 * 33]bool
	row := p.table(comps, buf[:])
	return row[len(comps)]
}

// MatchPrefix reports whether the pattern matches comps or a directory
// above it: comps[:k] for some k >= 1.
func (p *Pattern) MatchPrefix(comps []string) bool {
	if len(p.segs) == 2 && p.segs[0].kind == anyDirs && p.segs[1].kind != anyDirs {
		// "**/name", the shape of every unanchored deny pattern: checked on
		// every file operation, so without the table.
		for _, c := range comps {
			if p.segs[1].match(c) {
				return true
			}
		}
		return false
	}
	var buf [2 * 33]bool
	row := p.table(comps, buf[:])
	for _, ok := range row[1:] {
		if ok {
			return true
		}
	}
	return false
}

// table returns row j: whether the whole pattern matches comps[:j]. It
// uses buf when that is large enough.
func (p *Pattern) table(comps []string, buf []bool) []bool {
	n := len(comps) + 1
	if len(buf) < 2*n {
		buf = make([]bool, 2*n)
	}
	prev, cur := buf[:n:n], buf[n:2*n]
	clear(prev)
	if p.stars == 0 {
		// No "**": only comps[:len(segs)] can match.
		if len(p.segs) <= len(comps) {
			ok := true
			for i, s := range p.segs {
				if !s.match(comps[i]) {
					ok = false
					break
				}
			}
			prev[len(p.segs)] = ok
		}
		return prev
	}
	prev[0] = true
	for _, s := range p.segs {
		if s.kind == anyDirs {
			run := false
			for j := range prev {
				run = run || prev[j]
				cur[j] = run
			}
		} else {
			cur[0] = false
			for j := 1; j < n; j++ {
				cur[j] = prev[j-1] && s.match(comps[j-1])
			}
		}
		prev, cur = cur, prev
	}
	return prev
}
