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
