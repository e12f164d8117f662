package linediff

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrBinary is returned by Hunks when either side is binary (see IsBinary).
// git prints "Binary files a/x and b/x differ" instead of hunks for those.
var ErrBinary = errors.New("linediff: binary content")

// binaryCheckLen is how many leading bytes git inspects for a NUL byte.
const binaryCheckLen = 8000

// IsBinary reports whether git would treat content as binary when no
// gitattributes say otherwise: it contains a NUL byte in its first 8000 bytes.
// (git also treats blobs larger than core.bigFileThreshold, 512 MiB by
// default, as binary; callers handling such sizes must check that too.)
func IsBinary(data []byte) bool {
	if len(data) > binaryCheckLen {
		data = data[:binaryCheckLen]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// DefaultContext is git's default number of context lines.
const DefaultContext = 3

// Options controls the output of Hunks.
type Options struct {
	// Context is the number of unchanged lines shown around each change.
	// Zero or negative means DefaultContext (3), as git prints by default;
	// zero-context output (git diff -U0) is not offered.
	Context int
	// Color writes ANSI colours exactly as `git diff --color=always` does
	// with the default colour settings, including the highlighting of
	// whitespace errors (core.whitespace defaults: blank-at-eol,
	// space-before-tab, blank-at-eof) on added lines.
	Color bool
	// Text diffs content git would call binary as text all the same (a
	// script with a NUL byte, which a reviewer must be able to read).
	Text bool
}

func (o Options) context() int {
	if o.Context <= 0 {
		return DefaultContext
	}
	return o.Context
}

// Stats counts changed lines, as `git diff --numstat` reports them.
type Stats struct {
	Added, Deleted int
}

// Change is one run of differing lines: lines [OldStart, OldStart+OldLines)
// of the old content are replaced by lines [NewStart, NewStart+NewLines) of
// the new content. Line numbers are 0-based. One of OldLines and NewLines
// may be zero (a pure insertion or deletion); the position on the empty side
// is where the lines would be.
type Change struct {
	OldStart, OldLines int
	NewStart, NewLines int
}

// Diff returns the changes that turn a into b, in order, as git would place
// them (same alignment as the hunks printed by Hunks). Lines are split at
// '\n'; a final line without '\n' differs from the same text with one.
func Diff(a, b []byte) []Change {
	d := newDiff(a, b)
	return d.changes()
}

// Count returns the numbers of added and deleted lines between a and b, the
// numbers `git diff --numstat` prints for text files.
func Count(a, b []byte) Stats {
	var st Stats
	for _, c := range Diff(a, b) {
		st.Added += c.NewLines
		st.Deleted += c.OldLines
	}
	return st
}

// Hunks writes the hunks of the unified diff from a to b, exactly as git
// prints them after the "+++ b/path" line: "@@ -l,s +l,s @@ funcname"
// headers, context, removed and added lines, and "\ No newline at end of
// file" markers. It writes nothing when a and b are equal. It returns the
// line counts, which equal `git diff --numstat`.
//
// If either side is binary (IsBinary), Hunks writes nothing and returns
// ErrBinary. Errors from w are returned as they are.
func Hunks(w io.Writer, a, b []byte, opt Options) (Stats, error) {
	if !opt.Text && (IsBinary(a) || IsBinary(b)) {
		return Stats{}, ErrBinary
	}
	if bytes.Equal(a, b) {
		return Stats{}, nil
	}
	d := newDiff(a, b)
	changes := d.changes()
	var st Stats
	for _, c := range changes {
		st.Added += c.NewLines
		st.Deleted += c.OldLines
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	p := printer{w: bw, a: d.a, b: d.b, ctx: opt.context(), color: opt.Color}
	p.print(changes)
	if err := bw.Flush(); err != nil {
		return st, err
	}
	return st, nil
}

// lineOffsets returns the offsets at which the lines of data start,
// followed by len(data). Lines end after '\n'; the last may lack it.
func lineOffsets(data []byte) []int {
	offs := make([]int, 1, bytes.Count(data, []byte{'\n'})+2)
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			i = len(data)
		} else {
			i += j + 1
		}
		offs = append(offs, i)
	}
	return offs
}
