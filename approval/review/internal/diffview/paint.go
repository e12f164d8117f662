package diffview

import (
	"unicode/utf8"
)

// render is the drawing's own state beside the view's: the palette, the
// hunks worked out so far (word pairs, syntax colour), side-by-side's
// rows, and a buffer of styles reused row to row.
type render struct {
	ix   *diffIndex // the index it was made for (w makes another)
	pal  *palette
	c    *hiCache
	st   []style
	side sideState
	// beyond: the row's line has a changed word past what lineStyles
	// read of it, so past the screen's edge.
	beyond bool
}

func newRender(ix *diffIndex, colors int) *render {
	p := newPalette(colors)
	return &render{ix: ix, pal: p, c: newHiCache(ix, p), side: newSideState(ix)}
}

// bind makes the render the view's index's: w (space.go) indexes the
// diff again, and what was worked out of the old index's hunks and rows
// goes with it; the palette and what s asked for stay.
func (v *diffView) bind() {
	if v.hi == nil || v.hi.ix == v.ix {
		return
	}
	want, on := v.hi.side.want, v.hi.side.on
	v.hi = newRender(v.ix, v.hi.pal.colors)
	v.hi.side.want, v.hi.side.on = want, on
}

// style is how a byte of a row is drawn: its syntax class, whether it is
// a changed word, a search match, or the line's +/- marker.
type style uint16

const (
	stSyn    style = 0xff
	stWord   style = 1 << 8
	stMatch  style = 1 << 9
	stMarker style = 1 << 10
)

// lineStyles is the style of each byte of s, line no of file f as far as
// it is drawn: its syntax colour and changed words in a hunk, and the
// matches of the search.
func (v *diffView) lineStyles(f *diffFile, no int, kind lineKind, s string) []style {
	r := v.hi
	r.beyond = false
	st := r.st[:0]
	for range len(s) {
		st = append(st, 0)
	}
	if kind == kindAdd || kind == kindDel || kind == kindContext {
		if len(st) > 0 && kind != kindContext && r.pal.colors == 256 {
			st[0] = stMarker // only 256 colours draw it apart
		}
		if h := r.c.hunkOf(f, no); h != nil {
			side := sideNew
			if kind == kindDel {
				side = sideOld
			}
			var syn []span
			if kind == kindContext || r.pal.colors == 256 {
				// On 8 colours a removed or added line keeps git's
				// colour: its syntax is not drawn, so not lexed.
				syn = r.c.synOf(f, h, no, side)
			}
			for _, sp := range syn {
				for i := int(sp.from) + 1; i <= int(sp.to) && i < len(st); i++ {
					st[i] |= style(sp.fg)
				}
			}
			if kind != kindContext {
				for _, sp := range r.c.wordsOf(h, no) {
					if int(sp.to) >= len(st) {
						r.beyond = true
					}
					for i := int(sp.from) + 1; i <= int(sp.to) && i < len(st); i++ {
						st[i] |= stWord
					}
				}
			}
		}
	}
	for off := 0; v.query != "" && off < len(s); {
		i := indexFold(s[off:], v.query, v.fold)
		if i < 0 {
			break
		}
		for j := off + i; j < off+i+len(v.query); j++ {
			st[j] |= stMatch
		}
		off += i + len(v.query)
	}
	r.st = st
	return st
}

// paint writes s in its styles; fill: the rest of the row in the line's
// colour too (a removed or added line, on 256 colours). It reports
// whether a changed word was left past the row's edge, so that the edge
// can say so (edgeOf): a one-character change far to the right is seen
// at a glance too.
func (v *diffView) paint(w *cellWriter, kind lineKind, s string, st []style, fill bool) (hidden bool) {
	cur := style(0)
	w.b = v.hi.sgr(w.b, kind, 0)
	for i := 0; i < len(s) && !w.full; {
		j := i + 1
		for j < len(s) && (st[j] == st[i] || !utf8.RuneStart(s[j])) {
			j++
		}
		if st[i] != cur {
			cur = st[i]
			w.b = v.hi.sgr(w.b, kind, cur)
		}
		w.put(s[i:j])
		if w.full {
			hidden = v.hi.beyond
			for _, x := range st[i:] {
				hidden = hidden || x&stWord != 0
			}
		}
		i = j
	}
	if fill && v.hi.pal.colors == 256 && (kind == kindAdd || kind == kindDel) {
		if cur != 0 {
			w.b = v.hi.sgr(w.b, kind, 0)
		}
		w.spaces(w.width - w.col)
	}
	return hidden
}

// edgeOf ends a row of a line of kind as edge does; the '>' that says
// the line goes on is in the colour of a changed word when one is past
// it.
func (v *diffView) edgeOf(w cellWriter, kind lineKind, hidden bool) []byte {
	if !hidden || !w.full {
		return v.edge(w)
	}
	w.b = append(w.b, sgrReset...)
	w.b = column(w.b, v.cols)
	w.b = v.hi.sgr(w.b, kind, stWord)
	return append(w.b, ">"+sgrReset...)
}

// sgr appends the SGR sequence of a line of kind in style st: the view's
// own escapes, nothing of the diff's.
func (r *render) sgr(b []byte, kind lineKind, st style) []byte {
	p := r.pal
	if p.colors == 0 {
		b = append(b, sgrReset...)
		if st&stWord != 0 {
			b = append(b, "\x1b[4m"...)
		}
		if st&stMatch != 0 {
			b = append(b, escReverse...)
		}
		return b
	}
	b = append(b, "\x1b[0"...)
	switch kind {
	case kindHeader:
		b = append(b, ";1"...)
	case kindHunk:
		b = append(b, ";36"...)
	case kindAdd:
		if p.colors == 256 {
			b = append(b, ";48;5;22"...)
		} else {
			b = append(b, ";32"...)
		}
	case kindDel:
		if p.colors == 256 {
			b = append(b, ";48;5;52"...)
		} else {
			b = append(b, ";31"...)
		}
	}
	if st&stMarker != 0 && p.colors == 256 {
		if kind == kindAdd {
			b = append(b, ";1;32"...)
		} else {
			b = append(b, ";1;31"...)
		}
	}
	if fg := uint8(st & stSyn); fg != 0 && fg < synClasses && (p.colors == 256 || kind == kindContext) {
		b = append(b, ';')
		b = append(b, p.syn[fg]...)
	}
	if st&stWord != 0 {
		switch {
		case p.colors == 256 && kind == kindAdd:
			b = append(b, ";48;5;28"...)
		case p.colors == 256:
			b = append(b, ";48;5;124"...)
		case st&stMatch != 0:
			b = append(b, ";4"...)
		default:
			b = append(b, ";7"...)
		}
	}
	if st&stMatch != 0 {
		b = append(b, ";7"...)
	}
	return append(b, 'm')
}
