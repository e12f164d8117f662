package diffview

// ColorsOf is how many colours t shows: 0 without colour, 256 where it
// says so (Colors), else 8. The line prompt asks it too, so the prompt's
// hunks and the view are coloured alike.
func ColorsOf(t interface{ Color() bool }) int {
	if !t.Color() {
		return 0
	}
	if p, ok := t.(interface{ Colors() int }); ok {
		return p.Colors()
	}
	return 8
}

// colorsOfBool is the palette of a view made without a terminal (the
// tests'): 8 colours when it has colour.
func colorsOfBool(color bool) int {
	if color {
		return 8
	}
	return 0
}
