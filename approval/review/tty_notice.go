package review

import (
	"io"
	"time"

	"github.com/airlock-dev/airlock/internal/termsafe"
)

// What the TTY is reading, for Announce.
const (
	readingNone = iota
	readingKey  // ReadKey: the prompt waits for one key, nothing typed
	readingLine // ReadLine: the reviewer may be typing
)

// Announce shows line (a new request waiting) without taking the screen
// (short in the full-screen view's status row):
// at once, on a line of its own, when the prompt waits for a key; after
// the line being typed, before the next prompt, when one is typed; and in
// the full-screen view's status row, which redraws now (its read is
// interrupted as a resize interrupts it).
func (t *TTY) Announce(line, short string) {
	line = termsafe.Line(line)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notice = termsafe.Line(short)
	switch {
	case t.reading == readingKey:
		// Raw mode: the line ends with its own carriage return.
		_, _ = io.WriteString(t.f, "  "+line+"\r\n") // a terminal gone says so at the next read
		return
	case t.viewing && !t.canceled:
		t.resized = true
		_ = t.f.SetReadDeadline(time.Now()) // as WatchResize does
	}
	t.queued = append(t.queued, line)
}

// Noticed is the last announcement since ClearNotice.
func (t *TTY) Noticed() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.notice
}

// ClearNotice forgets the announcements (the request they were made over
// is no longer shown).
func (t *TTY) ClearNotice() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notice, t.queued = "", nil
}

// startReading writes the announcements held back, then marks what is
// read (readingKey, readingLine) until doneReading.
func (t *TTY) startReading(what int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.queued {
		_, _ = io.WriteString(t.f, "  "+l+"\n") // a terminal gone says so at the read
	}
	t.queued = nil
	t.reading = what
}

// doneReading ends what startReading marked; after a line, the
// announcements held back while it was typed are written now.
func (t *TTY) doneReading() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reading == readingLine {
		for _, l := range t.queued {
			_, _ = io.WriteString(t.f, "  "+l+"\n") // a terminal gone says so at the next read
		}
		t.queued = nil
	}
	t.reading = readingNone
}
