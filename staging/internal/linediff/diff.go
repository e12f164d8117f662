package linediff

import (
	"bytes"
	"hash/maphash"
)

// file is one side of a diff.
type file struct {
	data    []byte
	n       int     // number of lines
	offs    []int   // line i is data[offs[i]:offs[i+1]], with its '\n'
	ids     []int32 // equal lines have equal ids
	changed []bool  // n+1 entries; the extra one stays false
	indents []int32 // indentation cache for the heuristic, see indent()
}

// init splits data into lines.
func (f *file) init(data []byte) {
	f.data = data
	f.offs = lineOffsets(data)
	f.n = len(f.offs) - 1
	f.changed = make([]bool, f.n+1)
}

// line returns line i with its '\n', if any.
func (f *file) line(i int) []byte {
	return f.data[f.offs[i]:f.offs[i+1]:f.offs[i+1]]
}

// diff holds both sides and the computed alignment.
type diff struct {
	a, b file
	nids int // number of distinct lines
}

func newDiff(a, b []byte) *diff {
	d := &diff{}
	d.a.init(a)
	d.b.init(b)
	d.intern()
	d.compute()
	d.compact(&d.a, &d.b)
	d.compact(&d.b, &d.a)
	return d
}

// intern gives every distinct line an id, with an open-addressing hash
// table over the lines themselves (no copies).
func (d *diff) intern() {
	n := d.a.n + d.b.n
	size := 16
	for size < 2*n {
		size <<= 1
	}
	seed := maphash.MakeSeed()
	slots := make([]int32, size) // 1 + index into ents, 0 when free
	mask := uint64(size - 1)
	// An entry is the first occurrence of a line: line i of a, or line
	// ^i of b.
	type entry struct {
		hash uint64
		line int
	}
	ents := make([]entry, 0, n)
	text := func(line int) []byte {
		if line >= 0 {
			return d.a.line(line)
		}
		return d.b.line(^line)
	}
	id := func(line int) int32 {
		l := text(line)
		h := maphash.Bytes(seed, l)
		for i := h & mask; ; i = (i + 1) & mask {
			s := slots[i]
			if s == 0 {
				ents = append(ents, entry{h, line})
				slots[i] = int32(len(ents))
				return int32(len(ents) - 1)
			}
			if e := &ents[s-1]; e.hash == h && bytes.Equal(text(e.line), l) {
				return s - 1
			}
		}
	}
	d.a.ids = make([]int32, d.a.n)
	for i := range d.a.ids {
		d.a.ids[i] = id(i)
	}
	// Most lines of b usually follow the lines of a in order: try the line
	// after the last one found in a before hashing.
	d.b.ids = make([]int32, d.b.n)
	j := 0
	for i := range d.b.ids {
		l := d.b.line(i)
		if j < d.a.n && bytes.Equal(d.a.line(j), l) {
			d.b.ids[i] = d.a.ids[j]
			j++
			continue
		}
		v := id(^i)
		d.b.ids[i] = v
		if e := ents[v].line; e >= 0 {
			j = e + 1
		}
	}
	d.nids = len(ents)
}

// compute marks changed lines with a Myers diff. Lines that do not occur
// at all in the other file can never be matched; they are marked first and
// left out of the search, which keeps rewrites cheap.
func (d *diff) compute() {
	na, nb := len(d.a.ids), len(d.b.ids)
	// Trim the common prefix and suffix first: cheap and the common case.
	lo := 0
	for lo < na && lo < nb && d.a.ids[lo] == d.b.ids[lo] {
		lo++
	}
	ha, hb := na, nb
	for ha > lo && hb > lo && d.a.ids[ha-1] == d.b.ids[hb-1] {
		ha--
		hb--
	}
	if lo == ha && lo == hb {
		return
	}
	// Occurrence counts over the whole files.
	cntA := make([]int32, d.nids)
	cntB := make([]int32, d.nids)
	for _, v := range d.a.ids {
		cntA[v]++
	}
	for _, v := range d.b.ids {
		cntB[v]++
	}
	ra, pa := classify(&d.a, lo, ha, cntB)
	rb, pb := classify(&d.b, lo, hb, cntA)
	ca := make([]bool, len(ra))
	cb := make([]bool, len(rb))
	myers(ra, rb, ca, cb)
	for i, c := range ca {
		if c {
			d.a.changed[pa[i]] = true
		}
	}
	for i, c := range cb {
		if c {
			d.b.changed[pb[i]] = true
		}
	}
}

// changes lists the runs of changed lines.
func (d *diff) changes() []Change {
	var out []Change
	na, nb := d.a.n, d.b.n
	i, j := 0, 0
	for i < na || j < nb {
		if !d.a.changed[i] && !d.b.changed[j] {
			i++
			j++
			continue
		}
		c := Change{OldStart: i, NewStart: j}
		for i < na && d.a.changed[i] {
			i++
		}
		for j < nb && d.b.changed[j] {
			j++
		}
		c.OldLines = i - c.OldStart
		c.NewLines = j - c.NewStart
		out = append(out, c)
	}
	return out
}

// Line classes used before the Myers pass.
const (
	classKeep    = iota // takes part in the search
	classDiscard        // no match in the other file: certainly changed
	classMaybe          // matches very often in the other file
)

// Parameters of the removal of frequent lines inside changed regions.
const (
	maybeWindow = 100 // neighbours looked at on each side
	maxEqLimit  = 1024
)

// classify decides which lines of f[lo:hi] take part in the Myers search
// and marks the others changed. A line without any match in the other file
// is certainly changed. A line that occurs very often in the other file
// (at least the smallest power of two whose square exceeds this file's
// length) is also left out when it sits inside a stretch of
// certainly-changed lines, so that, say, the blank lines inside a rewritten
// block do not pin the diff to spurious matches. It returns the ids of the
// remaining lines and their positions.
func classify(f *file, lo, hi int, other []int32) ([]int32, []int) {
	mlim := int32(powSqrt(f.n))
	if mlim > maxEqLimit {
		mlim = maxEqLimit
	}
	class := make([]uint8, hi-lo)
	for i := lo; i < hi; i++ {
		switch nm := other[f.ids[i]]; {
		case nm == 0:
			class[i-lo] = classDiscard
		case nm >= mlim:
			class[i-lo] = classMaybe
		}
	}
	var ids []int32
	var pos []int
	for i, c := range class {
		if c == classMaybe && maybeDiscard(class, i) {
			c = classDiscard
		}
		if c == classDiscard {
			f.changed[lo+i] = true
			continue
		}
		ids = append(ids, f.ids[lo+i])
		pos = append(pos, lo+i)
	}
	return ids, pos
}

// maybeDiscard reports whether the frequent line i is to be left out: it
// must have certainly-changed lines on both sides before the nearest kept
// line, and these must clearly outnumber the frequent lines around it.
func maybeDiscard(class []uint8, i int) bool {
	count := func(step int) (dis, maybe int) {
		for r, j := 1, i+step; r <= maybeWindow && j >= 0 && j < len(class); r, j = r+1, j+step {
			switch class[j] {
			case classKeep:
				return
			case classDiscard:
				dis++
			default:
				maybe++
			}
		}
		return
	}
	dis0, maybe0 := count(-1)
	if dis0 == 0 {
		return false
	}
	dis1, maybe1 := count(1)
	if dis1 == 0 {
		return false
	}
	return dis0+dis1 > 3*(maybe0+maybe1+2)
}

// powSqrt returns the smallest power of two whose square exceeds n.
func powSqrt(n int) int {
	p := 1
	for p*p <= n {
		p <<= 1
	}
	return p
}
