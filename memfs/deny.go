package memfs

import (
	"fmt"
	"path"
	"strings"
)

// DefaultDenyPatterns are the files that commonly hold credentials. They are
// always in force; configuration can add patterns, never remove these.
var DefaultDenyPatterns = []string{
	".env", ".env.*",
	".ssh/", ".aws/", ".gnupg/", ".kube/",
	"**/.docker/config.json", "**/.config/gcloud/", "**/.config/gh/",
	".npmrc", ".pypirc", ".netrc", ".git-credentials",
	"*.pem", "*.key",
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
}

const (
	maxDenyPatterns    = 512
	maxDenyPatternSize = 1024
)

// DenyList decides which paths a worker may neither read nor write.
//
// Patterns are gitignore-style globs: a pattern without a slash matches a
// name at any depth ("*.pem"); a pattern with a slash is anchored at the
// workspace root unless it starts with "**/"; "**" matches any number of
// directories. A pattern matches a path when it matches the path itself or
// any directory above it, so ".ssh/" covers everything inside .ssh. Unlike
// gitignore, a trailing slash does not limit a pattern to directories: a
// file named ".ssh" is refused too, so nothing can change by turning one into
// the other. Negation ("!pattern") is refused: extra patterns add to the
// defaults and can never re-allow what they deny.
//
// Matching compares canonical names (NFC, case folded, without ignorable
// code points, NTFS stream suffixes or trailing dots and spaces), so
// ".ENV", ".env." and ".e\u200bnv" are all ".env".
//
// A DenyList is immutable and safe for concurrent use.
type DenyList struct {
	patterns []denyPattern
}

type denyPattern struct {
	text     string    // as configured, for messages
	anchored bool      // has a slash other than a trailing one
	parts    []segment // one per path component
	stars    int       // how many parts are "**"
}

// segment matches one canonical path component. Most patterns are a
// literal, a prefix ("id_rsa*") or a suffix ("*.pem"); only the rest pay
// for path.Match.
type segment struct {
	kind segKind
	s    string
}

type segKind uint8

const (
	segLiteral segKind = iota
	segPrefix
	segSuffix
	segGlob
	segAny // "**"
)

func compileSegment(glob string) segment {
	const meta = `*?[\`
	switch {
	case glob == "**":
		return segment{kind: segAny}
	case !strings.ContainsAny(glob, meta):
		return segment{kind: segLiteral, s: glob}
	case strings.HasSuffix(glob, "*") && !strings.ContainsAny(glob[:len(glob)-1], meta):
		return segment{kind: segPrefix, s: glob[:len(glob)-1]}
	case strings.HasPrefix(glob, "*") && !strings.ContainsAny(glob[1:], meta):
		return segment{kind: segSuffix, s: glob[1:]}
	}
	return segment{kind: segGlob, s: glob}
}

func (g segment) match(c string) bool {
	switch g.kind {
	case segLiteral:
		return c == g.s
	case segPrefix:
		return strings.HasPrefix(c, g.s)
	case segSuffix:
		return strings.HasSuffix(c, g.s)
	case segGlob:
		ok, _ := path.Match(g.s, c)
		return ok
	}
	return true
}

// NewDenyList returns the default patterns plus extra.
func NewDenyList(extra ...string) (*DenyList, error) {
	if len(extra) > maxDenyPatterns {
		return nil, fmt.Errorf("%d deny patterns given, at most %d are allowed", len(extra), maxDenyPatterns)
	}
	d := &DenyList{}
	for _, p := range DefaultDenyPatterns {
		dp, err := parseDenyPattern(p)
		if err != nil {
			panic("memfs: bad default deny pattern: " + err.Error())
		}
		d.patterns = append(d.patterns, dp)
	}
	for _, p := range extra {
		dp, err := parseDenyPattern(p)
		if err != nil {
			return nil, err
		}
		d.patterns = append(d.patterns, dp)
	}
	return d, nil
}

// Patterns returns the patterns in force, defaults first.
func (d *DenyList) Patterns() []string {
	out := make([]string, len(d.patterns))
	for i, p := range d.patterns {
		out[i] = p.text
	}
	return out
}

func parseDenyPattern(p string) (denyPattern, error) {
	bad := func(why string) (denyPattern, error) {
		return denyPattern{}, fmt.Errorf("deny pattern %q: %s", suggest(p), why)
	}
	switch {
	case strings.TrimSpace(p) == "":
		return bad("empty pattern")
	case len(p) > maxDenyPatternSize:
		return bad(fmt.Sprintf("longer than %d bytes", maxDenyPatternSize))
	case strings.HasPrefix(p, "!"):
		return bad("negation is not allowed: deny patterns add to the defaults and cannot re-allow a path")
	case strings.HasPrefix(p, "#"):
		return bad(`a leading "#" is a comment in gitignore; escape it as "\#" if you mean it`)
	}
	if err := checkChars(p); err != nil && err.Rule == RuleControl || err != nil && err.Rule == RuleInvalidUTF8 {
		return bad(err.Detail)
	}
	text := p
	p = strings.TrimRight(p, " ")
	p = strings.TrimSuffix(p, "/")
	dp := denyPattern{text: text}
	if strings.Contains(p, "/") {
		dp.anchored = true
		p = strings.TrimPrefix(p, "/")
	}
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "":
			return bad("empty segment")
		case ".", "..":
			return bad(`"." and ".." segments are not allowed`)
		}
		if part != "**" && strings.Contains(part, "**") {
			return bad(`"**" must be a whole segment, as in "**/name" or "dir/**"`)
		}
		folded := foldName(part)
		if _, err := path.Match(folded, ""); err != nil {
			return bad("malformed glob: " + err.Error())
		}
		seg := compileSegment(folded)
		if seg.kind == segAny {
			dp.stars++
		}
		dp.parts = append(dp.parts, seg)
	}
	return dp, nil
}

// match reports the first pattern that covers the path with components
// comps, or "" when none does.
func (d *DenyList) match(comps []string) string {
	var buf [32]string
	canon := buf[:0]
	for _, c := range comps {
		canon = append(canon, canonicalName(c))
	}
	for i := range d.patterns {
		if d.patterns[i].match(canon) {
			return d.patterns[i].text
		}
	}
	return ""
}

// Check refuses p, a canonical path (as CheckPath returns it), when the
// deny list covers it. Staging re-checks every path it commits with it.
func (d *DenyList) Check(p string) error {
	if err := d.check(p, strings.Split(p, "/")); err != nil {
		return err
	}
	return nil
}

// check refuses a path the deny list covers.
func (d *DenyList) check(name string, comps []string) *Error {
	if p := d.match(comps); p != "" {
		return refuse(name, RuleDenied, ErrDenied, "%q %s", strings.Join(comps, "/"), denyReason(p))
	}
	return nil
}

func denyReason(pattern string) string {
	return fmt.Sprintf("matches deny pattern %q: files that usually hold secrets are kept out of the sandbox and cannot be read, written, moved or linked to; leave this file out or use a name the pattern does not match", pattern)
}

// match reports whether the pattern covers the path or a directory above it.
func (p *denyPattern) match(comps []string) bool {
	if !p.anchored {
		for _, c := range comps {
			if p.parts[0].match(c) {
				return true
			}
		}
		return false
	}
	var memo [][]uint8
	if p.stars > 1 {
		// Several "**" could backtrack exponentially; remember results.
		memo = make([][]uint8, len(p.parts)+1)
		for i := range memo {
			memo[i] = make([]uint8, len(comps)+1)
		}
	}
	return p.matchFrom(0, 0, comps, memo)
}

// matchFrom reports whether parts[i:] match a non-empty prefix of comps
// that starts at j (memo[i][j]: 0 unknown, 1 yes, 2 no).
func (p *denyPattern) matchFrom(i, j int, comps []string, memo [][]uint8) bool {
	if i == len(p.parts) {
		return j > 0 // the path itself or a directory above it
	}
	if memo != nil && memo[i][j] != 0 {
		return memo[i][j] == 1
	}
	ok := false
	if p.parts[i].kind == segAny {
		for k := j; k <= len(comps) && !ok; k++ {
			ok = p.matchFrom(i+1, k, comps, memo)
		}
	} else if j < len(comps) && p.parts[i].match(comps[j]) {
		ok = p.matchFrom(i+1, j+1, comps, memo)
	}
	if memo != nil {
		memo[i][j] = 2
		if ok {
			memo[i][j] = 1
		}
	}
	return ok
}
