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
//
// What it keeps is held in chunks of at most chunkSize, each allocated
// once at its final size, and joined once by Text: a builder grown by
// doubling would, near a cap of tens of MiB, hold the old buffer and one
// twice its size at once, and leave both as garbage.
type Writer struct {
	chunks    [][]byte
	kept      int
	max       int
	cut       bool
	restBytes int64
	restLines int
}

const chunkSize = 1 << 20

// New returns a Writer that keeps max bytes.
func New(max int) *Writer { return &Writer{max: max} }

func (w *Writer) keep(p []byte) {
	w.kept += len(p)
	for len(p) > 0 {
		if n := len(w.chunks); n > 0 {
			last := w.chunks[n-1]
			if room := cap(last) - len(last); room > 0 {
				k := min(room, len(p))
				w.chunks[n-1] = append(last, p[:k]...)
				p = p[k:]
				continue
			}
		}
		w.chunks = append(w.chunks, make([]byte, 0, min(chunkSize, w.max-w.kept+len(p))))
	}
}

func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	if !w.cut {
		room := w.max - w.kept
		if len(p) <= room {
			w.keep(p)
			return n, nil
		}
		i := bytes.LastIndexByte(p[:room], '\n') + 1
		w.keep(p[:i])
		w.cut, p = true, p[i:]
	}
	w.restBytes += int64(len(p))
	w.restLines += bytes.Count(p, []byte("\n"))
	return n, nil
}

// Truncated reports whether anything was cut.
func (w *Writer) Truncated() bool { return w.cut }

// Text returns what was kept; when something was cut, a last line says
// how much, and hint (what to do to see the rest).
func (w *Writer) Text(hint string) string {
	tail := ""
	if w.cut {
		tail = fmt.Sprintf("[cut: %d more lines (%s); %s]", w.restLines, bytesize.Format(w.restBytes), hint)
	}
	var b strings.Builder
	b.Grow(w.kept + len(tail))
	for _, c := range w.chunks {
		b.Write(c)
	}
	b.WriteString(tail)
	return b.String()
}
