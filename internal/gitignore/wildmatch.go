package gitignore

import (
	"strings"
)

// A wildcard is one wildmatch pattern, compiled to tokens that each match
// one byte (a literal, "?", a set) or a run of bytes ("*", "**"). Matching
// keeps the set of token positions reachable after each byte of the text,
// so its cost is at most the pattern's length times the text's.
type wildcard struct {
	toks []token
	// never: the pattern holds something that matches nothing (a set
	// that is never closed, an unknown class, a trailing backslash), so
	// the pattern as a whole matches nothing.
	never bool
	// literal is the whole pattern when it has no special byte: compared,
	// not matched.
	literal string
	isLit   bool
	noSlash bool   // "*literal": any name without "/" ending in suffix
	suffix  string // for noSlash
	nfa     *nfa   // for the rest
}

type tokenKind uint8

const (
	tokByte    tokenKind = iota // one literal byte
	tokAny                      // "?": one byte but "/"
	tokSet                      // "[...]": one byte of set
	tokStar                     // "*": any run without "/"
	tokStarAll                  // "**" as a segment: any run
	// tokFork matches nothing and goes on either to the next token or
	// past the two after it: before a "**" followed by "/", it lets the
	// two match nothing together, so "a/**/b" matches "a/b". (Only from
	// the start of the "**": once it matched something, the "/" must
	// follow.)
	tokFork
)

type token struct {
	kind tokenKind
	b    byte
	set  *byteSet
}

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(b byte)      { s[b>>6] |= 1 << (b & 63) }
func (s *byteSet) has(b byte) bool { return s[b>>6]&(1<<(b&63)) != 0 }
func (s *byteSet) addRange(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s.add(byte(c))
	}
}

// special bytes start something other than a literal (git's
// is_glob_special).
const special = `*?[\`

// compileWild compiles p. The start of p counts as the start of a segment,
// as in git: a "**" there is a whole segment when a "/" or the end follows.
func compileWild(p string) wildcard {
	w := wildcard{}
	if !strings.ContainsAny(p, special) {
		w.literal, w.isLit = p, true
		return w
	}
	if p[0] == '*' && len(p) > 1 && !strings.ContainsAny(p[1:], special+"/") {
		// "*.pyc": git's own fast case, and the commonest pattern.
		w.noSlash, w.suffix = true, p[1:]
	}
	for i := 0; i < len(p); {
		switch c := p[i]; c {
		case '\\':
			if i+1 == len(p) {
				// A trailing backslash quotes nothing: git matches
				// nothing with it.
				w.never = true
				return w
			}
			w.toks = append(w.toks, token{kind: tokByte, b: p[i+1]})
			i += 2
		case '?':
			w.toks = append(w.toks, token{kind: tokAny})
			i++
		case '*':
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			segStart := i == 0 || p[i-1] == '/'
			segEnd := j == len(p) || p[j] == '/' || p[j] == '\\' && j+1 < len(p) && p[j+1] == '/'
			if j-i >= 2 && segStart && segEnd {
				if j < len(p) && p[j] == '/' {
					w.toks = append(w.toks, token{kind: tokFork})
				}
				w.toks = append(w.toks, token{kind: tokStarAll})
			} else {
				w.toks = append(w.toks, token{kind: tokStar})
			}
			i = j
		case '[':
			set, next, ok := parseSet(p, i+1)
			if !ok {
				w.never = true
				return w
			}
			w.toks = append(w.toks, token{kind: tokSet, set: set})
			i = next
		default:
			w.toks = append(w.toks, token{kind: tokByte, b: c})
			i++
		}
	}
	w.nfa = newNFA(w.toks)
	return w
}

// parseSet reads a set whose "[" is just before p[i], and returns it with
// the index after its "]". ok is false when the set never closes or names
// an unknown class: git then matches nothing.
func parseSet(p string, i int) (*byteSet, int, bool) {
	var set byteSet
	negated := false
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		negated = true
		i++
	}
	// prev is the byte the last item added alone, the low end of a range
	// that "-" may start; 0 after a range or a class (NUL is never in a
	// pattern).
	var prev byte
	for {
		if i >= len(p) {
			return nil, 0, false
		}
		c := p[i]
		var cur byte
		switch {
		case c == '\\':
			i++
			if i >= len(p) {
				return nil, 0, false
			}
			cur = p[i]
			set.add(cur)
		case c == '-' && prev != 0 && i+1 < len(p) && p[i+1] != ']':
			i++
			hi := p[i]
			if hi == '\\' {
				i++
				if i >= len(p) {
					return nil, 0, false
				}
				hi = p[i]
			}
			if prev <= hi {
				set.addRange(prev, hi)
			}
		case c == '[' && i+1 < len(p) && p[i+1] == ':':
			s := i + 2
			j := strings.IndexByte(p[s:], ']')
			if j < 0 {
				return nil, 0, false
			}
			j += s
			if j-s-1 < 0 || p[j-1] != ':' {
				// Not "[:name:]": the "[" is itself, and the rest
				// is read on as items.
				cur = '['
				set.add(cur)
				break
			}
			if !addClass(&set, p[s:j-1]) {
				return nil, 0, false
			}
			i = j
		default:
			cur = c
			set.add(cur)
		}
		prev = cur
		i++
		if i < len(p) && p[i] == ']' {
			break
		}
	}
	if negated {
		for k := range set {
			set[k] = ^set[k]
		}
	}
	// With pathname rules a set never matches "/".
	set[0] &^= 1 << '/'
	set[0] &^= 1 // nor NUL, which no path holds
	return &set, i + 1, true
}

// addClass adds the bytes of a POSIX class as git's own ASCII-only
// character types define it, and reports whether name is one.
func addClass(set *byteSet, name string) bool {
	in := func(f func(c byte) bool) {
		for c := 1; c < 128; c++ {
			if f(byte(c)) {
				set.add(byte(c))
			}
		}
	}
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	upper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	lower := func(c byte) bool { return c >= 'a' && c <= 'z' }
	alpha := func(c byte) bool { return upper(c) || lower(c) }
	graph := func(c byte) bool { return c > ' ' && c < 0x7f }
	switch name {
	case "alnum":
		in(func(c byte) bool { return alpha(c) || digit(c) })
	case "alpha":
		in(alpha)
	case "blank":
		in(func(c byte) bool { return c == ' ' || c == '\t' })
	case "cntrl":
		in(func(c byte) bool { return c < ' ' || c == 0x7f })
	case "digit":
		in(digit)
	case "graph":
		in(graph)
	case "lower":
		in(lower)
	case "print":
		in(func(c byte) bool { return c == ' ' || graph(c) })
	case "punct":
		in(func(c byte) bool { return graph(c) && !alpha(c) && !digit(c) })
	case "space":
		in(func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' })
	case "upper":
		in(upper)
	case "xdigit":
		in(func(c byte) bool { return digit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' })
	default:
		return false
	}
	return true
}

// match reports whether the whole of text matches.
func (w *wildcard) match(text string) bool {
	switch {
	case w.never:
		return false
	case w.isLit:
		return text == w.literal
	case w.noSlash:
		return strings.HasSuffix(text, w.suffix) && !strings.Contains(text, "/")
	}
	return w.nfa.match(text)
}

// nfa runs a pattern's tokens bit-parallel: state k (a bit) is "the first
// k tokens matched what was read", and each byte of the text moves every
// state at once with a few word operations, whatever the pattern (the
// shift-and way). Its cost is the text's length times the pattern's words
// of 64 tokens.
type nfa struct {
	words int
	final int // the state of the whole pattern matched
	// Per token kind, the bits of the tokens of that kind.
	anyByte, starSelf, allSelf, eps, fork []uint64
	lits                                  []litMask // one per distinct literal byte
	sets                                  []setBit
}

type litMask struct {
	b byte
	m []uint64
}

type setBit struct {
	set  *byteSet
	word int
	bit  uint64
}

func newNFA(toks []token) *nfa {
	n := len(toks)
	words := (n + 1 + 63) / 64
	mk := func() []uint64 { return make([]uint64, words) }
	a := &nfa{words: words, final: n, anyByte: mk(), starSelf: mk(), allSelf: mk(), eps: mk(), fork: mk()}
	set := func(m []uint64, k int) { m[k/64] |= 1 << (k % 64) }
	for k, t := range toks {
		switch t.kind {
		case tokByte:
			found := false
			for _, l := range a.lits {
				if l.b == t.b {
					set(l.m, k)
					found = true
				}
			}
			if !found {
				l := litMask{b: t.b, m: mk()}
				set(l.m, k)
				a.lits = append(a.lits, l)
			}
		case tokAny:
			set(a.anyByte, k)
		case tokSet:
			a.sets = append(a.sets, setBit{set: t.set, word: k / 64, bit: 1 << (k % 64)})
		case tokStar:
			set(a.starSelf, k)
			set(a.eps, k)
		case tokStarAll:
			set(a.allSelf, k)
			set(a.eps, k)
		case tokFork:
			set(a.fork, k)
		}
	}
	return a
}

func (a *nfa) match(text string) bool {
	if a.words == 1 {
		return a.match1(text)
	}
	cur, next, acc := make([]uint64, a.words), make([]uint64, a.words), make([]uint64, a.words)
	cur[0] = 1
	a.close(cur)
	for i := 0; i < len(text); i++ {
		c := text[i]
		clear(acc)
		for _, l := range a.lits {
			if l.b == c {
				copy(acc, l.m)
				break
			}
		}
		for _, s := range a.sets {
			if s.set.has(c) {
				acc[s.word] |= s.bit
			}
		}
		live := uint64(0)
		var carry uint64
		for w := range next {
			x := cur[w] & acc[w]
			if c != '/' {
				x = cur[w] & (acc[w] | a.anyByte[w])
			}
			next[w] = x<<1 | carry | cur[w]&a.allSelf[w]
			carry = x >> 63
			if c != '/' {
				next[w] |= cur[w] & a.starSelf[w]
			}
		}
		a.close(next)
		for _, v := range next {
			live |= v
		}
		if live == 0 {
			return false
		}
		cur, next = next, cur
	}
	return cur[a.final/64]&(1<<(a.final%64)) != 0
}

// close adds the states the stars and forks reach by matching nothing.
func (a *nfa) close(s []uint64) {
	for changed := true; changed; {
		changed = false
		var c1, c3 uint64
		for w := range s {
			one := s[w]&a.eps[w] | s[w]&a.fork[w]
			three := s[w] & a.fork[w]
			add := one<<1 | c1 | three<<3 | c3
			c1, c3 = one>>63, three>>61
			if add&^s[w] != 0 {
				s[w] |= add
				changed = true
			}
		}
	}
}

// match1 is match for a pattern of fewer than 64 tokens: one word.
func (a *nfa) match1(text string) bool {
	anyByte, starSelf, allSelf := a.anyByte[0], a.starSelf[0], a.allSelf[0]
	cur := a.close1(1)
	for i := 0; i < len(text) && cur != 0; i++ {
		c := text[i]
		var acc uint64
		for _, l := range a.lits {
			if l.b == c {
				acc = l.m[0]
				break
			}
		}
		for _, s := range a.sets {
			if s.set.has(c) {
				acc |= s.bit
			}
		}
		next := cur & allSelf
		if c != '/' {
			acc |= anyByte
			next |= cur & starSelf
		}
		cur = a.close1(next | (cur&acc)<<1)
	}
	return cur&(1<<a.final) != 0
}

func (a *nfa) close1(s uint64) uint64 {
	eps, fork := a.eps[0], a.fork[0]
	for {
		t := s | (s&(eps|fork))<<1 | (s&fork)<<3
		if t == s {
			return s
		}
		s = t
	}
}
