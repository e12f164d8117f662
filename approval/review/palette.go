package review

import (
	"os"
	"strings"

	"github.com/airlock-dev/airlock/approval/review/internal/diffview"
)

// Colors is how many colours the terminal shows: 0 without colour
// (NO_COLOR, TERM=dumb), 256 where TERM or COLORTERM says so, else the
// 8 every colour terminal has. The diff's syntax colour uses it
// (internal/diffview, colorDiff).
func (t *TTY) Colors() int {
	return termColors(t.color, os.Getenv("TERM"), os.Getenv("COLORTERM"))
}

func termColors(color bool, term, colorterm string) int {
	switch {
	case !color:
		return 0
	case strings.Contains(term, "256color"), strings.Contains(term, "truecolor"),
		colorterm == "truecolor", colorterm == "24bit":
		return 256
	}
	return 8
}

// colorsOf is t's colours, by the view's own rule.
func colorsOf(t Terminal) int { return diffview.ColorsOf(t) }
