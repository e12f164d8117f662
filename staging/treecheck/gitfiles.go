package treecheck

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"

	unorm "golang.org/x/text/unicode/norm"

	"github.com/airlock-dev/airlock/internal/termsafe"
)

// maxAttrLine is the longest .gitattributes line git accepts: fsck
// --strict refuses a line of 2048 bytes or more (newline excluded).
const maxAttrLine = 2047

// GitFileName returns ".gitmodules" or ".gitattributes" when a checkout on
// some filesystem would open name as that file, and "" otherwise. As for
// .git itself, the disguises count: case ("GitModules"), trailing dots and
// spaces, an NTFS stream (".gitmodules::$DATA"), characters HFS+ ignores,
// and the NTFS short names git itself checks for ("GITMOD~1", "gi7eba~1",
// "GITATT~1", "gi7d29~1").
func GitFileName(name string) string {
	n := name
	if !isASCII(n) {
		var b strings.Builder
		for _, r := range unorm.NFC.String(n) {
			if !termsafe.Ignorable(r) {
				b.WriteRune(unicode.ToLower(unicode.ToUpper(r)))
			}
		}
		n = b.String()
	}
	n = strings.ToLower(n)
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimRight(n, ". ")
	switch {
	case n == ".gitmodules" || shortName(n, "gitmod") || shortName(n, "gi7eba"):
		return ".gitmodules"
	case n == ".gitattributes" || shortName(n, "gitatt") || shortName(n, "gi7d29"):
		return ".gitattributes"
	}
	return ""
}

// shortName reports whether n is an NTFS 8.3 name prefix~N.
func shortName(n, prefix string) bool {
	rest, ok := strings.CutPrefix(n, prefix+"~")
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// CheckGitFile refuses the contents of git's own files (special is what
// GitFileName returned) that git fsck --strict rejects (measured against
// git 2.39): .gitmodules entries that could make a later clone run commands
// or write outside the repository, and .gitattributes lines too long to
// parse. It errs on the side of refusing: a .gitmodules it cannot read is
// refused too.
func CheckGitFile(p, special string, data []byte) error {
	refuse := func(why string) error {
		return fmt.Errorf("%s: %w: %s; git fsck would reject the commit", p, ErrRefusedContent, why)
	}
	switch special {
	case ".gitattributes":
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(line) > maxAttrLine {
				return refuse(fmt.Sprintf("line %d is %d bytes long; git parses .gitattributes lines of at most %d bytes", i+1, len(line), maxAttrLine))
			}
		}
	case ".gitmodules":
		if len(data) > maxGitFileBytes {
			return refuse(fmt.Sprintf("it is %d bytes, more than the %d git reads", len(data), maxGitFileBytes))
		}
		return checkGitmodules(data, refuse)
	}
	return nil
}

// checkGitmodules reads .gitmodules as git config does (keys on a section's
// line, quoted values, escapes, backslash continuations, comments) and
// refuses the values git fsck does: submodule names with ".." segments, url
// or path values that look like command-line flags, URLs hiding a line
// break, paths leading out, and update commands ("!cmd").
func checkGitmodules(data []byte, refuse func(string) error) error {
	vars, err := parseGitConfig(data)
	if err != nil {
		return refuse(fmt.Sprintf("git config cannot read it as git would (%v)", err))
	}
	for _, v := range vars {
		if v.section != "submodule" {
			continue
		}
		for _, seg := range strings.FieldsFunc(v.sub, func(r rune) bool { return r == '/' || r == '\\' }) {
			if seg == ".." {
				return refuse(fmt.Sprintf("line %d: submodule name %q has a \"..\" segment", v.line, v.sub))
			}
		}
		switch v.key {
		case "url", "path":
			if strings.HasPrefix(v.value, "-") {
				return refuse(fmt.Sprintf("line %d: submodule %s %q starts with \"-\", which git would read as an option", v.line, v.key, v.value))
			}
			if v.key == "url" && hidesLineBreak(v.value) {
				return refuse(fmt.Sprintf("line %d: submodule url %q hides a line break", v.line, v.value))
			}
			if v.key == "path" {
				for _, seg := range strings.FieldsFunc(v.value, func(r rune) bool { return r == '/' || r == '\\' }) {
					if seg == ".." || GitFileName(seg) != "" || strings.EqualFold(strings.TrimRight(seg, ". "), ".git") {
						return refuse(fmt.Sprintf("line %d: submodule path %q leads out of the repository or into git's own files", v.line, v.value))
					}
				}
			}
		case "update":
			if strings.HasPrefix(v.value, "!") {
				return refuse(fmt.Sprintf("line %d: submodule update %q runs a command", v.line, v.value))
			}
		}
	}
	return nil
}

func hidesLineBreak(v string) bool {
	if strings.ContainsAny(v, "\n\r") || strings.Contains(v, `\n`) || strings.Contains(v, `\r`) {
		return true
	}
	dec, err := url.PathUnescape(v)
	return err != nil || strings.ContainsAny(dec, "\n\r")
}

// configVar is one variable of a git config file.
type configVar struct {
	section, sub, key, value string
	line                     int
}

var errConfigSyntax = errors.New("bad config syntax")

// parseGitConfig reads a git config file as git's config.c does: a section
// header may be followed by a variable on the same line, values may be
// quoted and hold escapes, and a backslash at the end of a line continues
// the value on the next. Section and key names are case-insensitive.
func parseGitConfig(data []byte) ([]configVar, error) {
	p := &configParser{data: data, line: 1}
	var out []configVar
	var section, sub string
	for {
		c, ok := p.peek()
		if !ok {
			return out, nil
		}
		switch {
		case c == '\n' || c == ' ' || c == '\t' || c == '\r':
			p.next()
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			p.next()
			var err error
			if section, sub, err = p.header(); err != nil {
				return nil, err
			}
		case isKeyChar(c) && isLetter(c):
			if section == "" {
				return nil, fmt.Errorf("%w: line %d: a variable before any section", errConfigSyntax, p.line)
			}
			line := p.line
			key := strings.ToLower(p.word())
			p.skipBlanks()
			value := ""
			if c, ok := p.peek(); ok && c == '=' {
				p.next()
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				value = v
			} else if ok && c != '\n' && c != '#' && c != ';' && c != '\r' {
				return nil, fmt.Errorf("%w: line %d: expected \"=\" after %q", errConfigSyntax, p.line, key)
			}
			out = append(out, configVar{section: section, sub: sub, key: key, value: value, line: line})
		default:
			return nil, fmt.Errorf("%w: line %d: unexpected %q", errConfigSyntax, p.line, c)
		}
	}
}

type configParser struct {
	data []byte
	pos  int
	line int
}

func (p *configParser) peek() (byte, bool) {
	if p.pos >= len(p.data) {
		return 0, false
	}
	return p.data[p.pos], true
}

func (p *configParser) next() byte {
	c := p.data[p.pos]
	p.pos++
	if c == '\n' {
		p.line++
	}
	return c
}

func (p *configParser) skipLine() {
	for c, ok := p.peek(); ok && c != '\n'; c, ok = p.peek() {
		p.next()
	}
}

func (p *configParser) skipBlanks() {
	for c, ok := p.peek(); ok && (c == ' ' || c == '\t'); c, ok = p.peek() {
		p.next()
	}
}

func isLetter(c byte) bool  { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isKeyChar(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' || c == '-' }

func (p *configParser) word() string {
	start := p.pos
	for c, ok := p.peek(); ok && isKeyChar(c); c, ok = p.peek() {
		p.next()
	}
	return string(p.data[start:p.pos])
}

// header reads a section header after its "[": [section "sub"] or the old
// [section.sub].
func (p *configParser) header() (section, sub string, err error) {
	start := p.pos
	for c, ok := p.peek(); ok && (isKeyChar(c) || c == '.'); c, ok = p.peek() {
		p.next()
	}
	name := strings.ToLower(string(p.data[start:p.pos]))
	if i := strings.IndexByte(name, '.'); i >= 0 {
		name, sub = name[:i], name[i+1:]
	}
	p.skipBlanks()
	c, ok := p.peek()
	if ok && c == '"' {
		p.next()
		var b strings.Builder
		for {
			c, ok := p.peek()
			if !ok || c == '\n' {
				return "", "", fmt.Errorf("%w: line %d: unterminated subsection name", errConfigSyntax, p.line)
			}
			p.next()
			if c == '"' {
				break
			}
			if c == '\\' {
				if c, ok = p.peek(); !ok || c == '\n' {
					return "", "", fmt.Errorf("%w: line %d: bad escape in subsection name", errConfigSyntax, p.line)
				}
				p.next()
			}
			b.WriteByte(c)
		}
		sub = b.String()
		c, ok = p.peek()
	}
	if !ok || c != ']' || name == "" {
		return "", "", fmt.Errorf("%w: line %d: bad section header", errConfigSyntax, p.line)
	}
	p.next()
	return name, sub, nil
}

// value reads a value after "=", to the end of its (possibly continued)
// line.
func (p *configParser) value() (string, error) {
	var b strings.Builder
	quoted := false
	pendingSpace := 0 // trailing blanks outside quotes are dropped
	p.skipBlanks()
	for {
		c, ok := p.peek()
		if !ok || c == '\n' && !quoted {
			break
		}
		if c == '\n' {
			return "", fmt.Errorf("%w: line %d: a quoted value runs past the end of the line", errConfigSyntax, p.line)
		}
		p.next()
		switch {
		case !quoted && (c == '#' || c == ';'):
			p.skipLine()
			return b.String(), nil
		case !quoted && (c == ' ' || c == '\t'):
			pendingSpace++
			continue
		case c == '"':
			quoted = !quoted
		case c == '\\':
			e, ok := p.peek()
			if !ok {
				return "", fmt.Errorf("%w: line %d: a backslash at the end of the file", errConfigSyntax, p.line)
			}
			p.next()
			switch e {
			case '\n':
				continue // a continuation: the value goes on
			case 'n':
				e = '\n'
			case 't':
				e = '\t'
			case 'b':
				e = '\b'
			case '"', '\\':
			default:
				return "", fmt.Errorf("%w: line %d: bad escape \\%c", errConfigSyntax, p.line, e)
			}
			flush(&b, &pendingSpace)
			b.WriteByte(e)
		default:
			flush(&b, &pendingSpace)
			b.WriteByte(c)
		}
	}
	if quoted {
		return "", fmt.Errorf("%w: line %d: unterminated quote", errConfigSyntax, p.line)
	}
	return strings.TrimRight(b.String(), "\r"), nil
}

func flush(b *strings.Builder, n *int) {
	if b.Len() > 0 {
		for ; *n > 0; *n-- {
			b.WriteByte(' ')
		}
	}
	*n = 0
}
