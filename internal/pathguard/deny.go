package pathguard

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/glob"
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
	text string        // as configured, for messages
	glob *glob.Pattern // of canonical names; unanchored patterns start with "**"
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
			panic("pathguard: bad default deny pattern: " + err.Error())
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
	if err := CheckChars(p); err != nil && err.Rule == RuleControl || err != nil && err.Rule == RuleInvalidUTF8 {
		return bad(err.Detail)
	}
	text := p
	p = strings.TrimRight(p, " ")
	p = strings.TrimSuffix(p, "/")
	var parts []string
	if strings.Contains(p, "/") {
		p = strings.TrimPrefix(p, "/")
	} else {
		// A name without a slash is denied at any depth.
		parts = append(parts, "**")
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
		parts = append(parts, foldName(part))
	}
	g, err := glob.CompileSegments(parts)
	if err != nil {
		return bad(strings.TrimPrefix(err.Error(), glob.ErrBadPattern.Error()+": "))
	}
	return denyPattern{text: text, glob: g}, nil
}

// Match reports the first pattern that covers the path with components
// comps, or "" when none does.
func (d *DenyList) Match(comps []string) string {
	var buf [32]string
	canon := buf[:0]
	for _, c := range comps {
		canon = append(canon, Canonical(c))
	}
	return d.MatchCanon(canon)
}

// MatchCanon is Match of names already canonical.
func (d *DenyList) MatchCanon(canon []string) string {
	for i := range d.patterns {
		if d.patterns[i].glob.MatchPrefix(canon) {
			return d.patterns[i].text
		}
	}
	return ""
}

// MatchWhole reports the first pattern that matches the whole of canon
// (canonical names), not counting the directories above it: what Match
// adds for a path whose parent it leaves alone.
func (d *DenyList) MatchWhole(canon []string) string {
	for i := range d.patterns {
		if d.patterns[i].glob.Match(canon) {
			return d.patterns[i].text
		}
	}
	return ""
}

// Check refuses p, a canonical path (as CheckPath returns it), when the
// deny list covers it. Staging re-checks every path it commits with it.
func (d *DenyList) Check(p string) error {
	if err := d.CheckComps(p, strings.Split(p, "/")); err != nil {
		return err
	}
	return nil
}

// CheckComps refuses name, whose components are comps, when the deny list
// covers it.
func (d *DenyList) CheckComps(name string, comps []string) *Error {
	if p := d.Match(comps); p != "" {
		return Refuse(name, RuleDenied, ErrDenied, "%q %s", strings.Join(comps, "/"), DenyReason(p))
	}
	return nil
}

// DenyReason says why a path that matches pattern is refused, and what to
// do instead.
func DenyReason(pattern string) string {
	return fmt.Sprintf("matches deny pattern %q: files that usually hold secrets are kept out of the sandbox and cannot be read, written, moved or linked to; leave this file out or use a name the pattern does not match", pattern)
}
