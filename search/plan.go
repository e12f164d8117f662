package search

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"regexp"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// plan is how one pattern is searched. A literal that every match
// contains is found first, by scanning for its rarest byte, and the
// regular expression runs only on the lines that hold it, one line at a
// time: exactly the per-line meaning of ^, $ and \s, with nothing that
// could cross a line. When the literals are the whole pattern, the
// regular expression does not run at all.
//
// Go's regexp never sees a whole file: its backtracker takes only inputs
// of a few KiB, and past that its NFA is slower than a call per line (on
// the Go tree, `^\s+$` takes 2.7 s over whole files in (?m) mode and 0.33 s
// line by line, one core). Patterns without a literal therefore still run
// line by line, in parallel.
type plan struct {
	re *regexp.Regexp
	// lits: every match contains one of them; none means no literal is
	// known and every line is a candidate.
	lits []literal
	// exact: a line matches exactly when it holds one of lits.
	exact bool
}

// literal is a byte string to find: as it is, or in any ASCII case (s is
// then lower case, and a letter of s matches either case; fold is used only
// for literals whose letters have no case partner outside ASCII, such as
// the Kelvin sign for k).
type literal struct {
	s    []byte
	fold bool
	mask []byte // fold: 0x20 where s has a letter; b|mask == s for a match
	rare int    // the position of s's rarest byte, the one scanned for
}

// maxLits bounds an alternation's literals: each is scanned for on its
// own, so many of them cost more than they save.
const maxLits = 8

func newPlan(re *regexp.Regexp) *plan {
	p := &plan{re: re}
	// regexp.Compile parses with syntax.Perl; the same tree here.
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return p
	}
	if lits, exact := required(tree); len(lits) > 0 {
		p.lits, p.exact = lits, exact
	}
	return p
}

// required returns literals one of which every match of re contains, and
// whether holding one of them is the same as matching (re is a literal or
// an alternation of literals). None: nothing is known.
func required(re *syntax.Regexp) ([]literal, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		pieces := usablePieces(re.Rune, re.Flags&syntax.FoldCase != 0)
		if len(pieces) == 0 {
			return nil, false
		}
		best := pieces[0]
		for _, l := range pieces[1:] {
			if len(l.s) > len(best.s) {
				best = l
			}
		}
		// Exact when nothing of the literal was left out.
		return []literal{best}, len(pieces) == 1 && utf8.RuneCount(best.s) == len(re.Rune)
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpPlus:
		// x+ is in a line exactly when x is.
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false
		}
		lits, exact := required(re.Sub[0])
		return lits, exact && re.Min == 1
	case syntax.OpConcat:
		var best []literal
		for _, sub := range re.Sub {
			if lits, _ := required(sub); len(lits) > 0 && better(lits, best) {
				best = lits
			}
		}
		return best, false
	case syntax.OpAlternate:
		var all []literal
		exact := true
		for _, sub := range re.Sub {
			lits, ex := required(sub)
			if len(lits) == 0 {
				return nil, false
			}
			all = append(all, lits...)
			exact = exact && ex
		}
		if len(all) > maxLits {
			return nil, false
		}
		return all, exact
	}
	return nil, false
}

// better reports whether literals a make a better filter than b: their
// shortest is longer (fewer false candidates), then fewer of them.
func better(a, b []literal) bool {
	if len(b) == 0 {
		return true
	}
	sa, sb := shortest(a), shortest(b)
	if sa != sb {
		return sa > sb
	}
	return len(a) < len(b)
}

func shortest(lits []literal) int {
	n := len(lits[0].s)
	for _, l := range lits[1:] {
		n = min(n, len(l.s))
	}
	return n
}

// usablePieces splits a literal's runes into the pieces a byte scan can
// find for certain: it leaves out '\n' (no line holds it), U+FFFD (which
// the regexp matches for any invalid byte) and, when folding case, every
// rune other than ASCII without a partner outside it. Every match of the
// literal contains each piece.
func usablePieces(runes []rune, fold bool) []literal {
	var out []literal
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			out = append(out, newLiteral(cur, fold))
		}
		cur = nil
	}
	for _, r := range runes {
		switch {
		case r == '\n' || r == utf8.RuneError:
			flush()
		case !fold:
			cur = utf8.AppendRune(cur, r)
		case asciiFoldSafe(r):
			cur = append(cur, byte(unicode.ToLower(r)))
		default:
			flush()
		}
	}
	flush()
	return out
}

// asciiFoldSafe reports whether r and every rune case folding equates
// with it are ASCII ('k' is not: the Kelvin sign folds to it).
func asciiFoldSafe(r rune) bool {
	if r >= utf8.RuneSelf {
		return false
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func newLiteral(s []byte, fold bool) literal {
	l := literal{s: s}
	if fold {
		l.mask = make([]byte, len(s))
		for i, b := range s {
			if isLower(b) {
				l.mask[i] = 0x20
				l.fold = true
			}
		}
		if !l.fold {
			l.mask = nil // no letters: an exact scan finds it
		}
	}
	for i, b := range s {
		if byteRank(b, l.fold) < byteRank(s[l.rare], l.fold) {
			l.rare = i
		}
	}
	return l
}

func isLower(b byte) bool { return 'a' <= b && b <= 'z' }

// byteRank is how common b is in source code; a letter that may be in
// either case counts as its commoner case.
func byteRank(b byte, fold bool) uint8 {
	if fold && isLower(b) {
		return max(byteRanks[b], byteRanks[b&^0x20])
	}
	return byteRanks[b]
}

// index returns where l first occurs in s, or -1. It scans for l's rarest
// byte with bytes.IndexByte (vector instructions, many bytes a cycle) and
// compares l around each one it finds; on text where that byte is not
// rare after all, it hands the rest to a scan that does not depend on it.
func (l *literal) index(s []byte) int {
	n, a := len(l.s), l.rare
	if len(s) < n {
		return -1
	}
	c := l.s[a]
	two := l.fold && isLower(c) // both cases of c to scan for
	// next[0], next[1]: where c (and its upper case) next occur at or
	// after i; -1 nowhere, -2 not looked for yet.
	next := [2]int{-2, -2}
	if !two {
		next[1] = -1
	}
	i := a
	for hits := 0; ; hits++ {
		j := -1
		for t, b := range [2]byte{c, c &^ 0x20} {
			if next[t] != -1 && next[t] < i {
				next[t] = -1
				if k := bytes.IndexByte(s[i:], b); k >= 0 {
					next[t] = i + k
				}
			}
			if next[t] >= 0 && (j < 0 || next[t] < j) {
				j = next[t]
			}
		}
		k := j - a
		if j < 0 || k+n > len(s) {
			return -1
		}
		if l.equal(s[k : k+n]) {
			return k
		}
		i = j + 1
		if hits > 16 && hits*32 > i {
			// More than one in 32 bytes: not rare here.
			if r := l.dense(s[k+1:]); r >= 0 {
				return k + 1 + r
			}
			return -1
		}
	}
}

func (l *literal) equal(a []byte) bool {
	if !l.fold {
		return bytes.Equal(a, l.s)
	}
	return equalFold(a, l.s, l.mask)
}

// equalFold compares a with lit (lower case) in any ASCII case.
func equalFold(a, lit, mask []byte) bool {
	for j := range lit {
		if a[j]|mask[j] != lit[j] {
			return false
		}
	}
	return true
}

// dense is index for text full of l's rarest byte.
func (l *literal) dense(s []byte) int {
	if !l.fold {
		return bytes.Index(s, l.s)
	}
	return indexFold(s, l.s, l.mask)
}

// eachLine calls fn with the bounds of each matching line of data
// (without its '\n'), in order, until fn returns false. Lines are what
// read_file counts: the text after the last '\n' is a line when it is not
// empty.
func (p *plan) eachLine(data []byte, fn func(start, end int) bool) {
	if len(p.lits) == 0 {
		for off := 0; off < len(data); {
			end := lineEnd(data, off)
			if p.re.Match(data[off:end]) && !fn(off, end) {
				return
			}
			off = end + 1
		}
		return
	}
	// next[i] is where lits[i] next occurs at or after off: -1 none, -2
	// not yet looked for. Each literal is looked for again only once off
	// passes its last occurrence, so each scans the file once.
	var buf [maxLits]int
	next := buf[:len(p.lits)]
	for i := range next {
		next[i] = -2
	}
	for off := 0; off < len(data); {
		at := -1
		for i := range p.lits {
			if next[i] == -2 || next[i] >= 0 && next[i] < off {
				next[i] = -1
				if j := p.lits[i].index(data[off:]); j >= 0 {
					next[i] = off + j
				}
			}
			if next[i] >= 0 && (at < 0 || next[i] < at) {
				at = next[i]
			}
		}
		if at < 0 {
			return
		}
		start := off + bytes.LastIndexByte(data[off:at], '\n') + 1
		end := lineEnd(data, at)
		if (p.exact || p.re.Match(data[start:end])) && !fn(start, end) {
			return
		}
		off = end + 1
	}
}

// lineEnd is where the line holding data[i] ends: its '\n' or the end.
func lineEnd(data []byte, i int) int {
	if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(data)
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// indexFold returns where lit (lower case; mask has 0x20 at its letters)
// first occurs in s in any ASCII case, or -1. It looks at eight positions
// at a time: a word at each position and one len(lit)-1 further on are
// compared with lit's first and last byte (letters compared with 0x20 set,
// which folds ASCII case exactly), and only positions where both agree are
// compared whole.
func indexFold(s, lit, mask []byte) int {
	n := len(lit)
	if n == 0 {
		return 0
	}
	m0, c0 := uint64(mask[0])*lsb, uint64(lit[0])*lsb
	m1, c1 := uint64(mask[n-1])*lsb, uint64(lit[n-1])*lsb
	i := 0
	for ; i+n-1+8 <= len(s); i += 8 {
		w0 := binary.LittleEndian.Uint64(s[i:])
		w1 := binary.LittleEndian.Uint64(s[i+n-1:])
		x := ((w0 | m0) ^ c0) | ((w1 | m1) ^ c1)
		// A byte of x is zero where both ends agree. The classic test finds
		// every such byte (and some above one, which the check rejects).
		for z := (x - lsb) &^ x & msb; z != 0; z &= z - 1 {
			k := i + bits.TrailingZeros64(z)/8
			if equalFold(s[k:k+n], lit, mask) {
				return k
			}
		}
	}
	for ; i+n <= len(s); i++ {
		if equalFold(s[i:i+n], lit, mask) {
			return i
		}
	}
	return -1
}

// byteRanks orders bytes by how often they occur in the Go toolchain's
// source (code, text and test data; 12,000 files): 0 is the rarest, 255
// the commonest (' '). Only the order matters, to pick the byte of a
// literal to scan for.
var byteRanks = [256]uint8{
	254, 187, 181, 179, 172, 155, 168, 145, 162, 251, 247, 133, 144, 131, 152, 177, // 0x00
	158, 127, 119, 132, 134, 124, 125, 122, 136, 118, 86, 99, 109, 90, 83, 139, // 0x10
	255, 174, 223, 140, 167, 159, 166, 161, 231, 229, 180, 171, 242, 186, 234, 230, // 0x20
	250, 235, 228, 218, 221, 204, 215, 197, 212, 200, 225, 173, 165, 222, 160, 97, // 0x30
	156, 232, 195, 206, 203, 216, 188, 182, 193, 207, 151, 164, 199, 198, 190, 205, // 0x40
	201, 178, 211, 217, 214, 183, 189, 176, 191, 170, 153, 185, 202, 184, 95, 219, // 0x50
	150, 246, 220, 240, 237, 253, 238, 226, 224, 245, 154, 196, 239, 227, 248, 243, // 0x60
	233, 157, 249, 244, 252, 236, 210, 192, 241, 213, 169, 209, 175, 208, 56, 91, // 0x70
	149, 105, 92, 146, 137, 138, 79, 42, 102, 163, 38, 147, 94, 143, 117, 43, // 0x80
	113, 116, 53, 61, 121, 45, 8, 60, 57, 6, 21, 39, 34, 9, 14, 32, // 0x90
	104, 16, 13, 4, 41, 12, 2, 80, 73, 111, 129, 26, 40, 51, 0, 1, // 0xa0
	66, 31, 10, 5, 65, 20, 62, 107, 74, 101, 64, 11, 30, 7, 47, 59, // 0xb0
	148, 135, 130, 100, 106, 78, 110, 85, 93, 84, 52, 25, 88, 29, 58, 15, // 0xc0
	81, 68, 67, 55, 23, 77, 76, 22, 71, 72, 24, 63, 19, 3, 17, 37, // 0xd0
	128, 96, 98, 87, 48, 44, 27, 54, 142, 123, 35, 120, 75, 33, 28, 70, // 0xe0
	114, 50, 36, 115, 69, 18, 89, 82, 108, 126, 46, 49, 141, 112, 103, 194, // 0xf0
}
