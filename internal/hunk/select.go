package hunk

import (
	"errors"
	"fmt"
)

// ErrNothingSelected: a selection of a hunk's lines names none.
var ErrNothingSelected = errors.New("no changed line selected")

// Select rebuilds hunk keeping only the changed lines numbered in lines
// (counted from 0 among its "-" and "+" lines, as Changed lists them), as
// git add -p's edit does: a "-" line left out stays in the file (it
// becomes context), a "+" line left out is not added. The header's counts
// are recomputed. A line numbered twice, or past the hunk's changed
// lines, is an error.
//
// A line the file ends without a newline ("\ No newline at end of file")
// that stays as context while lines are added after it gains its newline:
// the change that adds it is kept, as nothing can follow it otherwise.
func Select(hunk string, lines []int) (string, error) {
	p, err := parse(hunk)
	if err != nil {
		return "", err
	}
	changed := 0
	for _, l := range p.lines {
		if l.kind != ' ' {
			changed++
		}
	}
	if len(lines) == 0 {
		return "", fmt.Errorf("%w: keep at least one of the hunk's %d changed lines, or leave the hunk out", ErrNothingSelected, changed)
	}
	keep := make([]bool, changed)
	for _, n := range lines {
		switch {
		case n < 0 || n >= changed:
			return "", fmt.Errorf("line %d is not a changed line of hunk %q: it has %d (numbered 0 to %d)", n, p.h, changed, changed-1)
		case keep[n]:
			return "", fmt.Errorf("line %d of hunk %q is selected twice", n, p.h)
		}
		keep[n] = true
	}
	out := parsed{h: p.h}
	i := 0
	for _, l := range p.lines {
		if l.kind == ' ' {
			out.lines = append(out.lines, l)
			continue
		}
		switch k := keep[i]; {
		case k:
			out.lines = append(out.lines, l)
		case l.kind == '-':
			out.lines = append(out.lines, line{kind: ' ', text: l.text, noEOL: l.noEOL})
		}
		i++
	}
	out.lines = fixEOL(out.lines)
	wasEmpty := p.h.newCount == 0
	s := out.String()
	np, _ := parse(s)
	// An empty side names the line before it: a side that becomes empty,
	// or stops being empty, moves its start by one.
	switch {
	case wasEmpty && np.h.newCount > 0:
		np.h.newStart++
	case !wasEmpty && np.h.newCount == 0 && np.h.newStart > 0:
		np.h.newStart--
	}
	return np.String(), nil
}

// fixEOL replaces a context line without a newline that new-side lines
// follow with its removal and its addition with a newline.
func fixEOL(lines []line) []line {
	for i, l := range lines {
		if l.kind != ' ' || !l.noEOL {
			continue
		}
		after := false
		for _, m := range lines[i+1:] {
			after = after || m.kind != '-'
		}
		if !after {
			continue
		}
		out := append([]line(nil), lines[:i]...)
		out = append(out, line{kind: '-', text: l.text, noEOL: true})
		// The removal goes before any other removal's addition: "-" lines
		// first, as git prints a change.
		out = append(out, line{kind: '+', text: l.text})
		return append(out, lines[i+1:]...)
	}
	return lines
}
