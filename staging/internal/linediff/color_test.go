package linediff

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// Lines with every kind of whitespace error git highlights (and some it
// does not), for the colour tests.
var wsAlphabet = []string{
	"", " ", "\t", "  ", "\t\t", " \t", "\t ",
	"a", "b", "a ", "a\t", " a", "\ta", "  \ta", "\t  a", " \t \tb", "\t\t c  ",
	"a\r", "\r", " \r", "a \r", "x\v", "\v", "\f", "y\f ", "\v\ta", " \v\ta",
	"func f() {", "}", "\treturn x ", "q\t\r",
}

func colorPairs(seed int64, count int) []pair {
	r := rand.New(rand.NewSource(seed))
	var pairs []pair
	for len(pairs) < count {
		la := randomLines(r, wsAlphabet, r.Intn(25))
		lb := mutate(r, wsAlphabet, la)
		// Blank lines at the end (blank-at-eof).
		if r.Intn(3) == 0 {
			for k := r.Intn(4); k > 0; k-- {
				la = append(la, []string{"", " ", "\t", "\r"}[r.Intn(4)])
			}
		}
		if r.Intn(2) == 0 {
			for k := r.Intn(5); k > 0; k-- {
				lb = append(lb, []string{"", " ", "\t", "\r", ""}[r.Intn(5)])
			}
		}
		a := joinLines(la, r.Intn(10) == 0, r.Intn(6) == 0)
		b := joinLines(lb, r.Intn(10) == 0, r.Intn(6) == 0)
		if bytes.Equal(a, b) {
			continue
		}
		pairs = append(pairs, pair{fmt.Sprintf("color%d-%d", seed, len(pairs)), a, b})
	}
	return pairs
}

// TestColorAgainstGit compares the coloured output, whitespace-error
// highlighting included, with git diff --color=always.
func TestColorAgainstGit(t *testing.T) {
	needGit(t)
	pairs := append(colorPairs(1, 300), randomPairs(3, 100)...)
	res := gitBatch(t, pairs, true)
	bad := 0
	for i, p := range pairs {
		var buf bytes.Buffer
		if _, err := Hunks(&buf, p.a, p.b, Options{Color: true}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), res[i].hunks) {
			bad++
			if bad <= 5 {
				t.Errorf("%s: coloured output differs from git\na=%q\nb=%q\n--- ours\n%q\n--- git\n%q", p.name, p.a, p.b, buf.Bytes(), res[i].hunks)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d coloured outputs differ from git", bad, len(pairs))
	}
}
