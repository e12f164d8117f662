package textcap

import (
	"fmt"
	"strings"
	"testing"
)

func TestWriter(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
		cut  bool
	}{
		{"a\nb\n", 10, "a\nb\n", false},
		{"aaaa\nbbbb\ncccc\n", 12, "aaaa\nbbbb\n[cut: 1 more lines (5 B); hint]", true},
		{"abcdef\n", 3, "[cut: 1 more lines (7 B); hint]", true},
	}
	for _, tt := range tests {
		w := New(tt.max)
		for _, line := range strings.SplitAfter(tt.in, "\n") {
			fmt.Fprint(w, line)
		}
		if got := w.Text("hint"); got != tt.want || w.Truncated() != tt.cut {
			t.Errorf("%q cut at %d: %q (cut %v), want %q (cut %v)", tt.in, tt.max, got, w.Truncated(), tt.want, tt.cut)
		}
	}
}

// Text over many chunks is what was written, cut at the same line as a
// plain prefix would be.
func TestWriterChunks(t *testing.T) {
	var all strings.Builder
	for i := 0; all.Len() < 3<<20; i++ {
		fmt.Fprintf(&all, "line %d %s\n", i, strings.Repeat("x", i%97))
	}
	in := all.String()
	const max = 5<<19 + 123
	w := New(max)
	for p, step := in, 1; len(p) > 0; step = step*7%65521 + 1 {
		k := min(step, len(p))
		fmt.Fprint(w, p[:k])
		p = p[k:]
	}
	got := w.Text("hint")
	cutAt := strings.LastIndexByte(in[:max], '\n') + 1
	if !strings.HasPrefix(got, in[:cutAt]) || !w.Truncated() || !strings.HasPrefix(got[cutAt:], "[cut: ") {
		t.Fatalf("text of %d bytes kept %d, want the first %d then the note", len(in), len(got), cutAt)
	}
}
