package review

import "testing"

func TestTermColors(t *testing.T) {
	for _, tc := range []struct {
		color           bool
		term, colorterm string
		want            int
	}{
		{false, "xterm-256color", "truecolor", 0}, // NO_COLOR, TERM=dumb
		{true, "xterm", "", 8},
		{true, "screen", "", 8},
		{true, "xterm-256color", "", 256},
		{true, "tmux-256color", "", 256},
		{true, "xterm", "truecolor", 256},
		{true, "xterm", "24bit", 256},
	} {
		if got := termColors(tc.color, tc.term, tc.colorterm); got != tc.want {
			t.Errorf("termColors(%v, %q, %q) = %d, want %d", tc.color, tc.term, tc.colorterm, got, tc.want)
		}
	}
}
