package lockedwriter

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// slowWriter writes a message one byte at a time, so two unserialised
// writers interleave inside each other's messages.
type slowWriter struct {
	mu sync.Mutex // keeps the buffer itself sound; whole messages are Writer's job
	b  bytes.Buffer
}

func (s *slowWriter) Write(p []byte) (int, error) {
	for i := range p {
		s.mu.Lock()
		s.b.WriteByte(p[i])
		s.mu.Unlock()
		runtime.Gosched()
	}
	return len(p), nil
}

func TestWritesStayWhole(t *testing.T) {
	var under slowWriter
	w := New(&under)
	msgs := []string{"aaaaaaaaaaaaaaaa\n", "bbbbbbbbbbbbbbbb\n", "cccccccccccccccc\n"}
	const each = 200
	var wg sync.WaitGroup
	for _, m := range msgs {
		wg.Add(1)
		go func(m string) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if n, err := w.Write([]byte(m)); n != len(m) || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
			}
		}(m)
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(under.b.String(), "\n"), "\n")
	if len(lines) != len(msgs)*each {
		t.Fatalf("%d lines, want %d", len(lines), len(msgs)*each)
	}
	for i, l := range lines {
		if len(l) != 16 || strings.Count(l, l[:1]) != 16 {
			t.Fatalf("line %d is %q: two writes interleaved", i, l)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
