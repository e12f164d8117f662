package lockedwriter

import (
	"io"
	"sync"
)

// Writer passes each Write whole to the writer under it, one at a time.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// New returns a Writer over w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does nothing: the writer under it belongs to the caller. It lets a
// Writer stand where an io.WriteCloser is asked for (the SDK's transport).
func (l *Writer) Close() error { return nil }
