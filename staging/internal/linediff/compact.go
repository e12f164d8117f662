package linediff

// After the Myers pass, each run of changed lines ("group") that can be
// moved without changing the diff's meaning is slid to a canonical place:
//
//   - a group whose first line equals the line after it (or whose last line
//     equals the line before it) can shift down (up) by one line;
//   - groups that touch while sliding merge;
//   - if, in its range of motion, the group can be lined up with a change
//     in the other file, it is placed there (a replacement reads better
//     than a deletion next to an unrelated insertion);
//   - otherwise the position is chosen by the indentation heuristic: every
//     candidate position is scored by how the blank lines and indentation
//     around the group's two boundaries look, preferring boundaries between
//     blocks of code over boundaries inside them.

// group is a maximal run [start,end) of changed lines in a file, possibly
// empty. Groups of the two files correspond one to one: the k-th group of
// each file comes after k unchanged lines.
type group struct{ start, end int }

func firstGroup(f *file) group {
	e := 0
	for f.changed[e] {
		e++
	}
	return group{0, e}
}

// next moves g to the following group; false at the end of the file.
func (f *file) next(g *group) bool {
	if g.end == f.n {
		return false
	}
	g.start = g.end + 1
	g.end = g.start
	for f.changed[g.end] {
		g.end++
	}
	return true
}

// prev moves g to the preceding group; false at the start of the file.
func (f *file) prev(g *group) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	g.start = g.end
	for g.start > 0 && f.changed[g.start-1] {
		g.start--
	}
	return true
}

// slideDown moves a non-empty group down by one line when its first line
// equals the line after it, merging it with a group it comes to touch.
func (f *file) slideDown(g *group) bool {
	if g.end < f.n && f.ids[g.start] == f.ids[g.end] {
		f.changed[g.start] = false
		f.changed[g.end] = true
		g.start++
		g.end++
		for f.changed[g.end] {
			g.end++
		}
		return true
	}
	return false
}

// slideUp moves a non-empty group up by one line when its last line equals
// the line before it, merging it with a group it comes to touch.
func (f *file) slideUp(g *group) bool {
	if g.start > 0 && f.ids[g.start-1] == f.ids[g.end-1] {
		g.start--
		g.end--
		f.changed[g.start] = true
		f.changed[g.end] = false
		for g.start > 0 && f.changed[g.start-1] {
			g.start--
		}
		return true
	}
	return false
}

// compact slides the groups of f, keeping o (the other file) in step.
func (d *diff) compact(f, o *file) {
	g := firstGroup(f)
	og := firstGroup(o)
	for {
		if g.end != g.start {
			d.place(f, o, &g, &og)
		}
		if !f.next(&g) {
			break
		}
		if !o.next(&og) {
			panic("linediff: group mismatch")
		}
	}
}

// place slides one non-empty group to its final position.
func (d *diff) place(f, o *file, g, og *group) {
	var earliestEnd, endMatchingOther int
	for {
		size := g.end - g.start
		for f.slideUp(g) {
			if !o.prev(og) {
				panic("linediff: group mismatch")
			}
		}
		earliestEnd = g.end
		endMatchingOther = -1
		if og.end > og.start {
			endMatchingOther = g.end
		}
		for f.slideDown(g) {
			if !o.next(og) {
				panic("linediff: group mismatch")
			}
			if og.end > og.start {
				endMatchingOther = g.end
			}
		}
		if size == g.end-g.start {
			break
		}
	}
	switch {
	case g.end == earliestEnd:
		// Cannot move.
	case endMatchingOther != -1:
		for og.end == og.start {
			f.slideUp(g)
			o.prev(og)
		}
	default:
		target := d.bestShift(f, g, earliestEnd)
		for g.end > target {
			f.slideUp(g)
			o.prev(og)
		}
	}
}

// Weights of the indentation heuristic (M. Haggerty's tuned values, as
// published with the heuristic in 2016).
const (
	startOfFilePenalty                    = 1
	endOfFilePenalty                      = 21
	totalBlankWeight                      = -30
	postBlankWeight                       = 6
	relativeIndentPenalty                 = -4
	relativeIndentWithBlankPenalty        = 10
	relativeOutdentPenalty                = 24
	relativeOutdentWithBlankPenalty       = 17
	relativeDedentPenalty                 = 23
	relativeDedentWithBlankPenalty        = 17
	indentWeight                          = 60
	maxSliding                            = 100
	maxIndent                             = 200
	maxBlanks                             = 20
	indentUnknown                   int32 = -2
)

// bestShift returns the end position, between earliestEnd and g.end, at
// which the group scores best.
func (d *diff) bestShift(f *file, g *group, earliestEnd int) int {
	size := g.end - g.start
	lowest := earliestEnd
	if v := g.end - size - 1; v > lowest {
		lowest = v
	}
	if v := g.end - maxSliding; v > lowest {
		lowest = v
	}
	best := -1
	var bestScore score
	for shift := lowest; shift <= g.end; shift++ {
		var sc score
		f.scoreSplit(shift-size, &sc)
		f.scoreSplit(shift, &sc)
		if best == -1 || sc.cmp(bestScore) <= 0 {
			best, bestScore = shift, sc
		}
	}
	return best
}

type score struct {
	effectiveIndent int
	penalty         int
}

func (s score) cmp(t score) int {
	c := 0
	if s.effectiveIndent > t.effectiveIndent {
		c = 1
	} else if s.effectiveIndent < t.effectiveIndent {
		c = -1
	}
	return indentWeight*c + s.penalty - t.penalty
}

// indent returns the indentation width of line i (a tab advances to the
// next multiple of 8, other characters count one), capped at maxIndent, or
// -1 for a line containing only whitespace.
func (f *file) indent(i int) int {
	if f.indents == nil {
		f.indents = make([]int32, f.n)
		for j := range f.indents {
			f.indents[j] = indentUnknown
		}
	}
	if v := f.indents[i]; v != indentUnknown {
		return int(v)
	}
	v := -1
	w := 0
	for _, c := range f.line(i) {
		if !isSpace(c) {
			v = w
			break
		}
		if c == ' ' {
			w++
		} else if c == '\t' {
			w += 8 - w%8
		}
		if w >= maxIndent {
			v = maxIndent
			break
		}
	}
	f.indents[i] = int32(v)
	return v
}

// isSpace is the set of characters git's own ctype treats as whitespace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// scoreSplit adds to s the score of a boundary just before line split.
func (f *file) scoreSplit(split int, s *score) {
	n := f.n
	endOfFile := split >= n
	ind := -1
	if !endOfFile {
		ind = f.indent(split)
	}
	preBlank, preIndent := 0, -1
	for i := split - 1; i >= 0; i-- {
		if v := f.indent(i); v != -1 {
			preIndent = v
			break
		}
		preBlank++
		if preBlank == maxBlanks {
			preIndent = 0
			break
		}
	}
	postBlank, postIndent := 0, -1
	for i := split + 1; i < n; i++ {
		if v := f.indent(i); v != -1 {
			postIndent = v
			break
		}
		postBlank++
		if postBlank == maxBlanks {
			postIndent = 0
			break
		}
	}

	if preIndent == -1 && preBlank == 0 {
		s.penalty += startOfFilePenalty
	}
	if endOfFile {
		s.penalty += endOfFilePenalty
	}
	// Blank lines right after the boundary count only if the line at the
	// boundary is itself blank.
	after := 0
	if ind == -1 {
		after = 1 + postBlank
	}
	totalBlank := preBlank + after
	s.penalty += totalBlankWeight * totalBlank
	s.penalty += postBlankWeight * after
	eff := ind
	if eff == -1 {
		eff = postIndent
	}
	anyBlanks := totalBlank != 0
	s.effectiveIndent += eff
	switch {
	case eff == -1 || preIndent == -1:
	case eff > preIndent:
		if anyBlanks {
			s.penalty += relativeIndentWithBlankPenalty
		} else {
			s.penalty += relativeIndentPenalty
		}
	case eff == preIndent:
	default:
		if postIndent != -1 && postIndent > eff {
			if anyBlanks {
				s.penalty += relativeOutdentWithBlankPenalty
			} else {
				s.penalty += relativeOutdentPenalty
			}
		} else {
			if anyBlanks {
				s.penalty += relativeDedentWithBlankPenalty
			} else {
				s.penalty += relativeDedentPenalty
			}
		}
	}
}
