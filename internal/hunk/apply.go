package hunk

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoMatch: a hunk's context and removed lines are not in the content it
// is applied to.
var ErrNoMatch = errors.New("hunk does not apply")

// NoMatchError names the hunk that did not apply.
type NoMatchError struct {
	Index  int    // its place in the hunks given to Apply
	Header string // its "@@" line
	Why    string
}

func (e *NoMatchError) Error() string {
	return fmt.Sprintf("hunk %d (%s) does not apply: %s", e.Index, e.Header, e.Why)
}

func (e *NoMatchError) Unwrap() error { return ErrNoMatch }

// Apply applies hunks, in order, to old, as git apply does without fuzz:
// each hunk's context and "-" lines must be in the content exactly. A hunk
// is looked for where its header puts it, shifted by what the hunks before
// it added and removed, then one line after, one before, two after, and so
// on outward, as git apply searches; the shift a hunk was found at carries
// to the next ones. A hunk whose header starts at line 0 or 1 must match
// at the start of the file, and one without trailing context at its end.
func Apply(old []byte, hunks []string) ([]byte, error) {
	img := splitLines(string(old))
	delta := 0
	for i, text := range hunks {
		p, err := parse(text)
		if err != nil {
			return nil, fmt.Errorf("hunk %d: %w", i, err)
		}
		var pre, post []string
		for _, l := range p.lines {
			if l.kind != '+' {
				pre = append(pre, l.content())
			}
			if l.kind != '-' {
				post = append(post, l.content())
			}
		}
		trailing := 0
		for j := len(p.lines) - 1; j >= 0 && p.lines[j].kind == ' '; j-- {
			trailing++
		}
		base := p.h.oldStart - 1
		if p.h.oldCount == 0 {
			base = p.h.oldStart // an empty side names the line before it
		}
		pos := find(img, pre, base+delta, p.h.oldStart <= 1, trailing == 0)
		if pos < 0 {
			return nil, &NoMatchError{Index: i, Header: p.h.String(), Why: "its context and removed lines are not in the file, at its place or near it"}
		}
		if last := len(post) - 1; last >= 0 && !strings.HasSuffix(post[last], "\n") && pos+len(pre) < len(img) {
			return nil, &NoMatchError{Index: i, Header: p.h.String(), Why: "it ends the file without a newline, but lines follow it"}
		}
		next := make([]string, 0, len(img)-len(pre)+len(post))
		next = append(append(append(next, img[:pos]...), post...), img[pos+len(pre):]...)
		img = next
		delta = pos - base + len(post) - len(pre)
	}
	return []byte(strings.Join(img, "")), nil
}

// find is where pre is in img: tried at line, then outward from it (after
// first), as git apply's find_pos does; -1 when nowhere. begin and end
// pin it to the start or the end of img.
func find(img, pre []string, line int, begin, end bool) int {
	if len(pre) > len(img) {
		return -1
	}
	switch {
	case begin:
		line = 0
	case end:
		line = len(img) - len(pre)
	}
	line = max(0, min(line, len(img)-len(pre)))
	at := func(pos int) bool {
		if (begin && pos != 0) || (end && pos+len(pre) != len(img)) {
			return false
		}
		for k, l := range pre {
			if img[pos+k] != l {
				return false
			}
		}
		return true
	}
	for d := 0; line+d <= len(img)-len(pre) || line-d >= 0; d++ {
		if line+d <= len(img)-len(pre) && at(line+d) {
			return line + d
		}
		if d > 0 && line-d >= 0 && at(line-d) {
			return line - d
		}
	}
	return -1
}

// splitLines cuts s into lines, each with its newline (the last one may
// have none).
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
