package linediff

import (
	"bytes"
	"fmt"
	"strings"
)

// File is one file's change as git's diff header names it.
type File struct {
	Path             string
	Created, Deleted bool   // neither: changed in place
	OldMode, NewMode uint32 // as git writes them (0100644...)
	OldID, NewID     string // the blobs' ids, abbreviated as shown
	Binary           bool   // "Binary files ... differ", no hunks
	Empty            bool   // both sides empty: no ---/+++ lines
	// Unavailable says why a side's content could not be read: the
	// header says so in place of the hunks.
	Unavailable string
	// From is, for a rename or copy, the path the file is made from (the
	// old side), Similarity git's "similarity index" of the two, and
	// Copy says the old path stays.
	From       string
	Similarity int
	Copy       bool
}

// Header writes f's header as `git diff` prints it, bold when coloured:
// "diff --git", the mode and index lines, and the ---/+++ lines when
// hunks follow. It reports whether they do (not for a binary or empty
// file, a mode change alone, or an unreadable side).
func Header(b *bytes.Buffer, f File, color bool) bool {
	// metaTail writes a bold header line; git writes tail after the colour
	// ends.
	metaTail := func(tail, format string, args ...any) {
		if color {
			b.WriteString("\x1b[1m")
		}
		fmt.Fprintf(b, format, args...)
		if color {
			b.WriteString("\x1b[m")
		}
		b.WriteString(tail)
		b.WriteByte('\n')
	}
	meta := func(format string, args ...any) { metaTail("", format, args...) }
	oldPath := f.Path
	if f.From != "" {
		oldPath = f.From
	}
	a, bn := QuotePath("a/"+oldPath), QuotePath("b/"+f.Path)
	meta("diff --git %s %s", a, bn)
	old, nw := a, bn
	switch {
	case f.Created:
		meta("new file mode %06o", f.NewMode)
		meta("index %s..%s", f.OldID, f.NewID)
		old = "/dev/null"
	case f.Deleted:
		meta("deleted file mode %06o", f.OldMode)
		meta("index %s..%s", f.OldID, f.NewID)
		nw = "/dev/null"
	default:
		// git's order: the modes, then a rename's or copy's lines, then
		// the index line, which names the mode only when it stays.
		if f.OldMode != f.NewMode {
			meta("old mode %06o", f.OldMode)
			meta("new mode %06o", f.NewMode)
		}
		if f.From != "" {
			verb := "rename"
			if f.Copy {
				verb = "copy"
			}
			meta("similarity index %d%%", f.Similarity)
			meta("%s from %s", verb, QuotePath(f.From))
			meta("%s to %s", verb, QuotePath(f.Path))
		}
		switch {
		case f.OldID == f.NewID:
			return false
		case f.OldMode != f.NewMode:
			meta("index %s..%s", f.OldID, f.NewID)
		default:
			meta("index %s..%s %06o", f.OldID, f.NewID, f.NewMode)
		}
	}
	switch {
	case f.Unavailable != "":
		fmt.Fprintf(b, "Content unavailable: %s\n", f.Unavailable)
		return false
	case f.Binary:
		fmt.Fprintf(b, "Binary files %s and %s differ\n", old, nw)
		return false
	case f.Empty:
		return false // an empty file created or deleted: no hunks, no ---/+++
	}
	// git ends a name with a space in a tab, so that patch tools can tell
	// where the name stops.
	metaTail(tabIfSpace(old), "--- %s", old)
	metaTail(tabIfSpace(nw), "+++ %s", nw)
	return true
}

func tabIfSpace(name string) string {
	if strings.Contains(name, " ") {
		return "\t"
	}
	return ""
}

// QuotePath quotes a path as git does with core.QuotePath on: in double
// quotes, with C escapes, when it has a quote, a backslash, a control byte
// or any byte outside ASCII.
func QuotePath(p string) string {
	needs := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			needs = true
			break
		}
	}
	if !needs {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
