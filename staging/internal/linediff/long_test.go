package linediff

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// Longer comparisons with git, run with -linediff.long (about a minute):
// more random seeds, long runs of equal lines, and large files with many
// or huge differences, where git's cost-limiting heuristics come into play.
// All of them agreed with git 2.39 byte for byte when written.

// runPairs builds files made of long runs of equal lines, edited a little.
func runPairs(seed int64, count, maxN int) []pair {
	r := rand.New(rand.NewSource(seed))
	var pairs []pair
	for len(pairs) < count {
		alpha := alphabets[r.Intn(len(alphabets))]
		var la []string
		for n := r.Intn(maxN) + 1; len(la) < n; {
			x := alpha[r.Intn(len(alpha))]
			for k := r.Intn(150); k > 0; k-- {
				la = append(la, x)
			}
		}
		lb := mutate(r, alpha, la)
		a, b := joinLines(la, false, false), joinLines(lb, false, false)
		if !bytes.Equal(a, b) {
			pairs = append(pairs, pair{fmt.Sprint("runs", seed, "-", len(pairs)), a, b})
		}
	}
	return pairs
}

// heavyPairs builds large files with edits every few dozen lines.
func heavyPairs(seed int64, count, maxN int) []pair {
	r := rand.New(rand.NewSource(seed))
	var pairs []pair
	for len(pairs) < count {
		alpha := alphabets[r.Intn(len(alphabets))]
		if r.Intn(2) == 0 {
			alpha = nil
			for i := 0; i < 40; i++ {
				alpha = append(alpha, fmt.Sprint("line", i))
			}
		}
		n := maxN/2 + r.Intn(maxN/2)
		la := randomLines(r, alpha, n)
		lb := la
		for e := n / (10 + r.Intn(100)); e > 0; e-- {
			lb = mutate(r, alpha, lb)
		}
		pairs = append(pairs, pair{fmt.Sprint("heavy", seed, "-", len(pairs)), joinLines(la, false, false), joinLines(lb, false, false)})
	}
	return pairs
}

// blockPairs builds large files whose common blocks are separated by
// unrelated random blocks.
func blockPairs(seed int64, count, maxN int) []pair {
	r := rand.New(rand.NewSource(seed))
	var pairs []pair
	for len(pairs) < count {
		alpha := alphabets[r.Intn(len(alphabets))]
		var la, lb []string
		u := 0
		for len(la) < maxN {
			for k := 15 + r.Intn(40); k > 0; k-- {
				l := fmt.Sprint("common", u)
				if r.Intn(3) == 0 {
					l = alpha[r.Intn(len(alpha))]
				}
				u++
				la = append(la, l)
				lb = append(lb, l)
			}
			la = append(la, randomLines(r, alpha, r.Intn(600))...)
			lb = append(lb, randomLines(r, alpha, r.Intn(600))...)
		}
		pairs = append(pairs, pair{fmt.Sprint("block", seed, "-", len(pairs)), joinLines(la, false, false), joinLines(lb, false, false)})
	}
	return pairs
}

func TestLongAgainstGit(t *testing.T) {
	if !*longTests {
		t.Skip("run with -linediff.long")
	}
	needGit(t)
	type set struct {
		name  string
		pairs []pair
	}
	var sets []set
	for seed := int64(10); seed < 20; seed++ {
		sets = append(sets, set{fmt.Sprint("random", seed), randomPairs(seed, 400)})
	}
	for _, n := range []int{50, 300, 1000, 3000} {
		sets = append(sets, set{fmt.Sprint("runs", n), runPairs(int64(n), 200, n)})
	}
	for _, n := range []int{3000, 10000, 30000, 80000} {
		sets = append(sets, set{fmt.Sprint("heavy", n), heavyPairs(int64(n), 6, n)})
		sets = append(sets, set{fmt.Sprint("block", n), blockPairs(int64(n), 6, n)})
	}
	for _, s := range sets {
		same := compareWithGit(t, s.pairs, Options{})
		t.Logf("%s: %d of %d identical to git", s.name, same, len(s.pairs))
		if same != len(s.pairs) {
			t.Errorf("%s: %d of %d identical to git", s.name, same, len(s.pairs))
		}
	}
	for seed := int64(100); seed < 106; seed++ {
		pairs := append(colorPairs(seed, 1000), randomPairs(seed, 300)...)
		same := compareWithGit(t, pairs, Options{Color: true})
		t.Logf("color%d: %d of %d identical to git", seed, same, len(pairs))
		if same != len(pairs) {
			t.Errorf("color%d: %d of %d identical to git", seed, same, len(pairs))
		}
	}
}
