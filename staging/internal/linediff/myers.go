package linediff

// This file implements the linear-space variant of Myers' O(ND) algorithm
// (E. W. Myers, "An O(ND) Difference Algorithm and Its Variations", 1986,
// section 4b): the edit graph is split at a point of a shortest edit path,
// found by searching from both corners at once until the two searches meet
// (the "middle snake"), and both halves are solved the same way.
//
// Like git, the search stops being exact when a box is expensive, so that
// huge differences cannot take quadratic time:
//
//   - past heurMinCost rounds, a diagonal that made good progress for its
//     cost and ends in a run of at least snakeLen matching lines is taken
//     as the split point;
//   - past limit rounds (the smallest power of two whose square exceeds the
//     size of the problem, at least minCostLimit), the point furthest from
//     its corner is taken.
//
// A box reached through an exact split is solved exactly, as is the half of
// a heuristic split that lies between the search's corner and the split
// point. These choices, and the tie-breaking rules below, were matched to
// git's output by black-box comparison.

const (
	minCostLimit = 256 // fewest rounds before giving up on optimality
	heurMinCost  = 256 // rounds before long snakes are accepted as splits
	snakeLen     = 20  // length of a "long" snake
	heurFactor   = 4   // progress a long snake needs, per round spent
)

// myers marks in ca and cb the lines of a and b that are not part of the
// common subsequence it finds.
func myers(a, b []int32, ca, cb []bool) {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return
	}
	size := n + m + 3
	s := &snakeSearch{
		a:     a,
		b:     b,
		fwd:   make([]int, size),
		bwd:   make([]int, size),
		off:   m + 1,
		limit: max(minCostLimit, powSqrt(size)),
	}
	type box struct {
		lo1, hi1, lo2, hi2 int
		exact              bool // no heuristics in this box
	}
	stack := []box{{0, n, 0, m, false}}
	for len(stack) > 0 {
		bx := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		lo1, hi1, lo2, hi2 := bx.lo1, bx.hi1, bx.lo2, bx.hi2
		for lo1 < hi1 && lo2 < hi2 && a[lo1] == b[lo2] {
			lo1++
			lo2++
		}
		for lo1 < hi1 && lo2 < hi2 && a[hi1-1] == b[hi2-1] {
			hi1--
			hi2--
		}
		switch {
		case lo1 == hi1:
			for j := lo2; j < hi2; j++ {
				cb[j] = true
			}
		case lo2 == hi2:
			for i := lo1; i < hi1; i++ {
				ca[i] = true
			}
		default:
			x, y, exactLo, exactHi := s.split(lo1, hi1, lo2, hi2, bx.exact)
			// The halves are independent; the order does not matter.
			stack = append(stack, box{x, hi1, y, hi2, exactHi}, box{lo1, x, lo2, y, exactLo})
		}
	}
}

type snakeSearch struct {
	a, b     []int32
	fwd, bwd []int // furthest x reached per diagonal k = x-y, at index k+off
	off      int
	limit    int
}

const (
	noFwd = -1                 // below any x
	noBwd = int(^uint(0) >> 1) // above any x
)

// split returns a point (x, y) strictly between the corners of the box
// (whose first lines differ, as do its last lines) through which a shortest
// edit path passes, or a good path when the box is too expensive, and
// whether each half, [lo1,x)x[lo2,y) and [x,hi1)x[y,hi2), is to be solved
// exactly.
func (s *snakeSearch) split(lo1, hi1, lo2, hi2 int, exact bool) (x, y int, exactLo, exactHi bool) {
	a, b := s.a, s.b
	fv, bv, off := s.fwd, s.bwd, s.off
	ta, tb := a[:hi1], b[:hi2]       // for forward snakes
	ra, rb := a[lo1:hi1], b[lo2:hi2] // for backward snakes
	kmin, kmax := lo1-hi2, hi1-lo2   // diagonals of the box
	fmid, bmid := lo1-lo2, hi1-hi2   // diagonals of the two corners
	odd := (fmid-bmid)&1 != 0
	fmin, fmax := fmid, fmid
	bmin, bmax := bmid, bmid
	fv[fmid+off] = lo1
	bv[bmid+off] = hi1
	for d := 1; ; d++ {
		var longSnake bool

		// Forward: extend the diagonal range by one on each side when the
		// box allows, marking the new outer neighbours unreachable.
		if fmin > kmin {
			fmin--
			fv[fmin-1+off] = noFwd
		} else {
			fmin++
		}
		if fmax < kmax {
			fmax++
			fv[fmax+1+off] = noFwd
		} else {
			fmax--
		}
		x, y, met, long := forwardRound(fv, bv, ta, tb, off, fmin, fmax, bmin, bmax, odd)
		if met {
			return x, y, true, true
		}
		longSnake = long

		// Backward, the same from the bottom-right corner.
		if bmin > kmin {
			bmin--
			bv[bmin-1+off] = noBwd
		} else {
			bmin++
		}
		if bmax < kmax {
			bmax++
			bv[bmax+1+off] = noBwd
		} else {
			bmax--
		}
		x, y, met, long = backwardRound(bv, fv, ra, rb, off, lo1, lo2, bmin, bmax, fmin, fmax, !odd)
		if met {
			return x, y, true, true
		}
		longSnake = longSnake || long

		if exact {
			continue
		}
		if longSnake && d > heurMinCost {
			if x, y, ok := s.snakeSplit(lo1, hi1, lo2, hi2, fmin, fmax, fmid, d, true); ok {
				return x, y, true, false
			}
			if x, y, ok := s.snakeSplit(lo1, hi1, lo2, hi2, bmin, bmax, bmid, d, false); ok {
				return x, y, false, true
			}
		}
		if d >= s.limit {
			x, y, fromFwd := s.furthestSplit(lo1, hi1, lo2, hi2, fmin, fmax, bmin, bmax)
			return x, y, fromFwd, !fromFwd
		}
	}
}

// forwardRound advances the forward search by one round, over diagonals
// fmax, fmax-2, ..., fmin, and reports whether a snake longer than
// snakeLen was followed. With check set, it stops at the first diagonal
// where it meets the backward search (whose range is [bmin,bmax]).
func forwardRound(fv, bv []int, ta, tb []int32, off, fmin, fmax, bmin, bmax int, check bool) (x, y int, met, long bool) {
	for k := fmax; k >= fmin; k -= 2 {
		i := k + off
		// Take the further of a deletion from diagonal k-1 and an
		// insertion from k+1, the deletion on ties.
		x := fv[i+1]
		if del := fv[i-1]; del >= x {
			x = del + 1
		}
		y := x - k
		x0 := x
		for uint(x) < uint(len(ta)) && uint(y) < uint(len(tb)) && ta[x] == tb[y] {
			x++
			y++
		}
		if x-x0 > snakeLen {
			long = true
		}
		fv[i] = x
		if check && bmin <= k && k <= bmax && bv[i] <= x {
			return x, y, true, long
		}
	}
	return 0, 0, false, long
}

// backwardRound is forwardRound for the backward search. ra and rb are the
// box's lines, starting at lo1 and lo2.
func backwardRound(bv, fv []int, ra, rb []int32, off, lo1, lo2, bmin, bmax, fmin, fmax int, check bool) (x, y int, met, long bool) {
	for k := bmax; k >= bmin; k -= 2 {
		i := k + off
		// Take the further of an insertion from diagonal k-1 and a
		// deletion from k+1, the deletion on ties.
		x := bv[i+1] - 1
		if ins := bv[i-1]; ins <= x {
			x = ins
		}
		// Follow the snake in box coordinates.
		u, v := x-lo1, x-k-lo2
		u0 := u
		if u <= len(ra) && v <= len(rb) {
			for u > 0 && v > 0 && ra[u-1] == rb[v-1] {
				u--
				v--
			}
		}
		if u0-u > snakeLen {
			long = true
		}
		x = u + lo1
		bv[i] = x
		if check && fmin <= k && k <= fmax && x <= fv[i] {
			return x, v + lo2, true, long
		}
	}
	return 0, 0, false, long
}

// snakeSplit looks, among the diagonals [kmin,kmax] of the forward (or
// backward) search after d rounds, for the point with the most progress
// that exceeds heurFactor*d, lies at least snakeLen lines inside the box
// and is reached through a snake of at least snakeLen matching lines.
// Progress is the distance covered from the corner, less the distance of
// the diagonal from the corner's diagonal mid.
func (s *snakeSearch) snakeSplit(lo1, hi1, lo2, hi2, kmin, kmax, mid, d int, forward bool) (int, int, bool) {
	a, b := s.a, s.b
	best, bx, by := 0, 0, 0
	for k := kmax; k >= kmin; k -= 2 {
		dist := k - mid
		if dist < 0 {
			dist = -dist
		}
		if forward {
			x := s.fwd[k+s.off]
			y := x - k
			v := (x - lo1) + (y - lo2) - dist
			if v <= heurFactor*d || v <= best ||
				x < lo1+snakeLen || x >= hi1 || y < lo2+snakeLen || y >= hi2 {
				continue
			}
			ok := true
			for j := 1; j <= snakeLen && ok; j++ {
				ok = a[x-j] == b[y-j]
			}
			if ok {
				best, bx, by = v, x, y
			}
		} else {
			x := s.bwd[k+s.off]
			y := x - k
			v := (hi1 - x) + (hi2 - y) - dist
			if v <= heurFactor*d || v <= best ||
				x <= lo1 || x > hi1-snakeLen || y <= lo2 || y > hi2-snakeLen {
				continue
			}
			ok := true
			for j := 0; j < snakeLen && ok; j++ {
				ok = a[x+j] == b[y+j]
			}
			if ok {
				best, bx, by = v, x, y
			}
		}
	}
	return bx, by, best > 0
}

// furthestSplit picks, when the search is too expensive, the point furthest
// from its starting corner among those reached by either search (the
// backward search's on ties), and reports whether it is the forward one.
func (s *snakeSearch) furthestSplit(lo1, hi1, lo2, hi2, fmin, fmax, bmin, bmax int) (int, int, bool) {
	fv, bv, off := s.fwd, s.bwd, s.off
	bestF, fx, fy := -1, 0, 0
	for k := fmax; k >= fmin; k -= 2 {
		x := fv[k+off]
		y := x - k
		if x > hi1 || y > hi2 || x < lo1 || y < lo2 {
			continue
		}
		if p := x + y - lo1 - lo2; p > bestF {
			bestF, fx, fy = p, x, y
		}
	}
	bestB, bx, by := -1, 0, 0
	for k := bmax; k >= bmin; k -= 2 {
		x := bv[k+off]
		y := x - k
		if x > hi1 || y > hi2 || x < lo1 || y < lo2 {
			continue
		}
		if p := hi1 + hi2 - x - y; p > bestB {
			bestB, bx, by = p, x, y
		}
	}
	if bestF > bestB {
		if fx == hi1 && fy == hi2 {
			// Cannot happen (the searches would have met), but never
			// return a corner: that would make no progress.
			return lo1 + 1, lo2, true
		}
		return fx, fy, true
	}
	if bestB <= 0 || bx == lo1 && by == lo2 {
		return lo1 + 1, lo2, true
	}
	return bx, by, false
}
