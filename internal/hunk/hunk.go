package hunk

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// noNewline is git's marker after a line that has no newline at the end of
// the file.
const noNewline = `\ No newline at end of file`

// ErrMalformed: a text is not a hunk as git prints one.
var ErrMalformed = errors.New("malformed hunk")

// Split takes one file's diff (its "diff --git" header, then its hunks, as
// git diff prints them) apart: header is everything before the first
// hunk, and each hunk runs from its "@@" line through its last line
// (with a "\ No newline at end of file" marker, if any). A diff without
// hunks (binary, a mode change alone) is all header. Hunks are found by
// their line counts, never by what a line looks like, so a changed line
// that reads "@@ ..." stays in its hunk.
func Split(diff string) (header string, hunks []string, err error) {
	rest := diff
	for rest != "" && !strings.HasPrefix(rest, "@@ ") {
		_, after, ok := strings.Cut(rest, "\n")
		if !ok {
			rest = ""
			break
		}
		rest = after
	}
	header = diff[:len(diff)-len(rest)]
	for rest != "" {
		n, err := hunkLen(rest)
		if err != nil {
			return "", nil, fmt.Errorf("hunk %d: %w", len(hunks), err)
		}
		hunks = append(hunks, rest[:n])
		rest = rest[n:]
	}
	return header, hunks, nil
}

// hunkLen is the length of the hunk s starts with.
func hunkLen(s string) (int, error) {
	line, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return 0, fmt.Errorf("%w: %q has no lines", ErrMalformed, s)
	}
	h, err := parseHeader(line)
	if err != nil {
		return 0, err
	}
	n := len(line) + 1
	old, nu := h.oldCount, h.newCount
	for old > 0 || nu > 0 || strings.HasPrefix(rest, `\`) {
		l, after, ok := strings.Cut(rest, "\n")
		if !ok {
			return 0, fmt.Errorf("%w: %q ends before its last line (a hunk's lines each end with a newline)", ErrMalformed, line)
		}
		switch {
		case l == "" || l[0] == ' ':
			old, nu = old-1, nu-1
		case l[0] == '-':
			old--
		case l[0] == '+':
			nu--
		case l[0] == '\\':
		default:
			return 0, fmt.Errorf("%w: %q: line %q is neither context, \"-\" nor \"+\"", ErrMalformed, line, l)
		}
		if old < 0 || nu < 0 {
			return 0, fmt.Errorf("%w: %q holds more lines than its header counts", ErrMalformed, line)
		}
		n += len(l) + 1
		rest = after
	}
	return n, nil
}

// header is a hunk's "@@ -o,oc +n,nc @@ fn" line.
type header struct {
	oldStart, oldCount int
	newStart, newCount int
	fn                 string // what follows the second "@@", with its space
}

func parseHeader(line string) (header, error) {
	var h header
	bad := func() (header, error) {
		return header{}, fmt.Errorf("%w: %q is not a hunk header (@@ -start,count +start,count @@)", ErrMalformed, line)
	}
	rest, ok := strings.CutPrefix(line, "@@ -")
	if !ok {
		return bad()
	}
	old, rest, ok := strings.Cut(rest, " +")
	if !ok {
		return bad()
	}
	nu, fn, ok := strings.Cut(rest, " @@")
	if !ok {
		return bad()
	}
	var err1, err2 error
	h.oldStart, h.oldCount, err1 = parseRange(old)
	h.newStart, h.newCount, err2 = parseRange(nu)
	if err1 != nil || err2 != nil {
		return bad()
	}
	h.fn = fn
	return h, nil
}

func parseRange(s string) (start, count int, err error) {
	a, b, ok := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil || start < 0 {
		return 0, 0, errors.New("bad start")
	}
	count = 1
	if ok {
		if count, err = strconv.Atoi(b); err != nil || count < 0 {
			return 0, 0, errors.New("bad count")
		}
	}
	return start, count, nil
}

func (h header) String() string {
	rng := func(start, count int) string {
		if count == 1 {
			return strconv.Itoa(start)
		}
		return strconv.Itoa(start) + "," + strconv.Itoa(count)
	}
	return "@@ -" + rng(h.oldStart, h.oldCount) + " +" + rng(h.newStart, h.newCount) + " @@" + h.fn
}

// line is one line of a hunk: its kind (' ', '-', '+'), its text without
// the kind, and whether the file has no newline after it.
type line struct {
	kind  byte
	text  string
	noEOL bool
}

// content is the line as it is in the file.
func (l line) content() string {
	if l.noEOL {
		return l.text
	}
	return l.text + "\n"
}

type parsed struct {
	h     header
	lines []line
}

// parse reads one hunk.
func parse(hunk string) (parsed, error) {
	n, err := hunkLen(hunk)
	if err != nil {
		return parsed{}, err
	}
	if n != len(hunk) {
		return parsed{}, fmt.Errorf("%w: text follows the hunk's last line: %.40q", ErrMalformed, hunk[n:])
	}
	first, rest, _ := strings.Cut(hunk, "\n")
	h, _ := parseHeader(first)
	p := parsed{h: h}
	for rest != "" {
		l, after, _ := strings.Cut(rest, "\n")
		rest = after
		switch {
		case l == "":
			p.lines = append(p.lines, line{kind: ' '})
		case l[0] == '\\':
			if len(p.lines) == 0 {
				return parsed{}, fmt.Errorf("%w: %q: %q follows no line", ErrMalformed, first, l)
			}
			p.lines[len(p.lines)-1].noEOL = true
		default:
			p.lines = append(p.lines, line{kind: l[0], text: l[1:]})
		}
	}
	return p, nil
}

// String prints the hunk as git does, its header counts from its lines.
func (p parsed) String() string {
	var b strings.Builder
	h := p.h
	h.oldCount, h.newCount = 0, 0
	for _, l := range p.lines {
		if l.kind != '+' {
			h.oldCount++
		}
		if l.kind != '-' {
			h.newCount++
		}
	}
	b.WriteString(h.String())
	b.WriteByte('\n')
	for _, l := range p.lines {
		b.WriteByte(l.kind)
		b.WriteString(l.text)
		b.WriteByte('\n')
		if l.noEOL {
			b.WriteString(noNewline + "\n")
		}
	}
	return b.String()
}

// Changed lists the hunk's changed lines, "-" and "+" with their text, in
// the hunk's order: a selection's line numbers count in this list, from 0.
func Changed(hunk string) ([]string, error) {
	p, err := parse(hunk)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range p.lines {
		if l.kind != ' ' {
			out = append(out, string(l.kind)+l.text)
		}
	}
	return out, nil
}
