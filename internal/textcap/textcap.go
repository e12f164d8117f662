package textcap

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/bytesize"
)

// Writer keeps the first max bytes written to it, cut at a line's end,
// and only counts the rest: a diff of a whole workspace is never held whole
// to show a page of it.
type Writer struct {
	b         strings.Builder
	max       int
	cut       bool
	restBytes int64
	restLines int
}

// New returns a Writer that keeps max bytes.
func New(max int) *Writer { return &Writer{max: max} }

func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	if !w.cut {
		room := w.max - w.b.Len()
		if len(p) <= room {
			w.b.Write(p)
			return n, nil
		}
		i := bytes.LastIndexByte(p[:room], '\n') + 1
		w.b.Write(p[:i])
		w.cut, p = true, p[i:]
	}
	w.restBytes += int64(len(p))
	w.restLines += bytes.Count(p, []byte("\n"))
	return n, nil
}

// Truncated reports whether anything was left out.
func (w *Writer) Truncated() bool { return w.cut }

// Text is what was kept, with a note of what was not and hint.
func (w *Writer) Text(hint string) string {
	if !w.cut {
		return w.b.String()
	}
	fmt.Fprintf(&w.b, "[cut: %d more lines (%s); %s]", w.restLines, bytesize.Format(w.restBytes), hint)
	return w.b.String()
}
