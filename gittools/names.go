package gittools

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/termsafe"
)

// shown is a name (a path, a target, a checkpoint) as an answer tells the
// worker of it: as it is when it is plain, and as a Go string literal,
// every unusual character escaped (\x1b, \u202e, \xff), when it holds
// anything a terminal or a reader would take for something else: the
// worker sees what the name is. The notation is Go's, which a worker
// reads back exactly; the reviewer's screen uses termsafe's.
func shown(name string) string {
	if termsafe.Clean(name) {
		return name
	}
	return strconv.QuoteToASCII(name)
}

// shownAll is shown for each of names.
func shownAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = shown(n)
	}
	return out
}

// escapeText is an error's text with what shown escapes in a name escaped
// the same way, newlines and tabs kept: the last guard for a name some
// message quoted raw (a regular expression's error, say).
func escapeText(s string) string {
	if termsafe.Text(s) == s {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		chunk := s[i : i+n]
		switch {
		case r == '\n' || r == '\t':
			b.WriteString(chunk)
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !termsafe.Clean(chunk):
			q := strconv.QuoteToASCII(chunk)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(chunk)
		}
		i += n
	}
	return b.String()
}
