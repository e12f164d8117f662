// Package commitmeta owns the text of a staged commit other than its tree:
// the message, tidied as `git commit -m` tidies it and refused when it is
// not one (CleanMessage), and the author and committer, refused when git
// would not write them (CheckSignature). staging applies both before it
// makes a commit; it imports nothing of airlock's.
package commitmeta

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidMessage: a commit message is empty, too long or not text.
var ErrInvalidMessage = errors.New("invalid commit message")

// CheckSignature refuses a commit's author or committer (role) that git
// would not write: no name or email, brackets or line breaks, not UTF-8.
func CheckSignature(role, name, email string) error {
	bad := func(why string) error {
		return fmt.Errorf("staging: %s %q <%s> %s", role, name, email, why)
	}
	switch {
	case strings.TrimSpace(name) == "" || strings.TrimSpace(email) == "":
		return bad("needs a name and an email")
	case strings.ContainsAny(name+email, "<>\n\r\x00"):
		return bad("may not contain <, > or line breaks (git would refuse the commit)")
	case !utf8.ValidString(name + email):
		return bad("is not valid UTF-8")
	}
	return nil
}

const maxMessageBytes = 64 << 10

// CleanMessage tidies a commit message as `git commit -m` does (trailing
// whitespace, leading and trailing blank lines, runs of blank lines) and
// refuses what is not a message.
func CleanMessage(m string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w: %s", ErrInvalidMessage, why)
	}
	if len(m) > maxMessageBytes {
		return bad(fmt.Sprintf("it is %d bytes; keep it under %d", len(m), maxMessageBytes))
	}
	if !utf8.ValidString(m) {
		return bad("it is not valid UTF-8")
	}
	for _, r := range m {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return bad(fmt.Sprintf("it contains control character U+%04X", r))
		}
	}
	var lines []string
	blank := false
	// A carriage return alone ends a line too (as old Macs wrote them):
	// left in, `git log` in a terminal would draw the text after it over
	// the text before, and a reader of the target's history would see a
	// message other than the one the reviewer approved.
	m = strings.ReplaceAll(strings.ReplaceAll(m, "\r\n", "\n"), "\r", "\n")
	for _, line := range strings.Split(m, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" {
			blank = len(lines) > 0
			continue
		}
		if blank {
			lines = append(lines, "")
			blank = false
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return bad(`it is empty; say what the change does, e.g. "Add quarterly report"`)
	}
	return strings.Join(lines, "\n") + "\n", nil
}
