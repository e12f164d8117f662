package diffview

import (
	"unicode"
	"unicode/utf8"
)

// maxWordCells bounds the word diff of a pair of lines: the table of
// their words' common run is at most this big, past it only the lines'
// common start and end are compared (as diff-highlight does), so that a
// pair of minified lines costs no more than a screen.
const maxWordCells = 1 << 16

// maxWordBytes is the longest line whose words are compared: past it,
// its common start and end alone (a line of 4 KiB is minified code or
// data, not prose).
const maxWordBytes = 4 << 10

// wordDiff is the changed words of a and of b, a removed line's content
// and the added one it is paired with, as git's --word-diff finds them:
// the words (runs of letters, digits and _; runs of spaces; each other
// character alone) of their longest common run kept, the rest changed.
// A changed run is then narrowed to the characters that differ, so that a
// one-character change in a long identifier shows as that character.
// Lines with no word in common are changed whole: nothing is
// highlighted within them.
func wordDiff(a, b string) (wa, wb []span) {
	var ta, tb []int
	if len(a) <= maxWordBytes && len(b) <= maxWordBytes {
		ta, tb = words(a), words(b)
	}
	if ta == nil || len(ta)*len(tb) > maxWordCells {
		p := commonPrefix(a, b)
		s := commonSuffix(a[p:], b[p:])
		return changed(p, len(a)-s), changed(p, len(b)-s)
	}
	// lcs[i][j] is the common run of ta[i:] and tb[j:], in words.
	n, m := len(ta)-1, len(tb)-1 // the last entry of each is the end
	lcs := make([]int32, (n+1)*(m+1))
	at := func(i, j int) int32 {
		if i >= n || j >= m {
			return 0
		}
		return lcs[i*(m+1)+j]
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			v := max(at(i+1, j), at(i, j+1))
			if a[ta[i]:ta[i+1]] == b[tb[j]:tb[j+1]] {
				v = max(v, at(i+1, j+1)+1)
			}
			lcs[i*(m+1)+j] = v
		}
	}
	common := false
	i, j := 0, 0
	ca, cb := ta[0], tb[0] // where the current changed run starts
	for i < n || j < m {
		if i < n && j < m && a[ta[i]:ta[i+1]] == b[tb[j]:tb[j+1]] && at(i, j) == at(i+1, j+1)+1 {
			wa, wb = narrow(a, b, ca, ta[i], cb, tb[j], wa, wb)
			if !isSpace(a[ta[i]:ta[i+1]]) {
				common = true
			}
			i, j = i+1, j+1
			ca, cb = ta[i], tb[j]
			continue
		}
		if j >= m || i < n && at(i+1, j) >= at(i, j+1) {
			i++
		} else {
			j++
		}
	}
	wa, wb = narrow(a, b, ca, len(a), cb, len(b), wa, wb)
	if !common {
		return nil, nil
	}
	return wa, wb
}

// narrow adds the changed runs a[fa:ta] and b[fb:tb], less the characters
// they start and end with in common.
func narrow(a, b string, fa, ta, fb, tb int, wa, wb []span) ([]span, []span) {
	x, y := a[fa:ta], b[fb:tb]
	p := commonPrefix(x, y)
	for p > 0 && (p < len(x) && !utf8.RuneStart(x[p]) || p < len(y) && !utf8.RuneStart(y[p])) {
		p--
	}
	s := commonSuffix(x[p:], y[p:])
	for s > 0 && (!utf8.RuneStart(x[len(x)-s]) || !utf8.RuneStart(y[len(y)-s])) {
		s--
	}
	if fa+p < ta-s {
		wa = append(wa, span{from: int32(fa + p), to: int32(ta - s)})
	}
	if fb+p < tb-s {
		wb = append(wb, span{from: int32(fb + p), to: int32(tb - s)})
	}
	return wa, wb
}

func changed(from, to int) []span {
	if from >= to {
		return nil
	}
	return []span{{from: int32(from), to: int32(to)}}
}

// words is where each word of s starts, and len(s) last.
func words(s string) []int {
	var at []int
	class := -1
	for i, r := range s {
		c := wordClass(r)
		if c != class || c == 2 {
			at = append(at, i)
		}
		class = c
	}
	return append(at, len(s))
}

// wordClass: 0 a word's character, 1 a space, 2 any other (a word alone).
func wordClass(r rune) int {
	switch {
	case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
		return 0
	case r == ' ' || r == '\t':
		return 1
	}
	return 2
}

func isSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}
