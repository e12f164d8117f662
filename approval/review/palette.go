package review

import (
	"os"
	"strings"
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

// colorsOf is t's colours: Colors where it says, else 8 with colour.
func colorsOf(t Terminal) int {
	if !t.Color() {
		return 0
	}
	if p, ok := t.(interface{ Colors() int }); ok {
		return p.Colors()
	}
	return 8
}
