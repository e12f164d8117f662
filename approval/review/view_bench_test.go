package review

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkFirstScreen300Files times what the reviewer waits for after
// pressing d on a 300-file, 20,000-line push: the index built and the
// first screen drawn. Its peer, the pager's path, sanitises and colours
// the whole text before the pager shows a line.
func BenchmarkFirstScreen300Files(b *testing.B) {
	r := bigPush(b, 300, 67)
	if n := strings.Count(r.Diff, "\n"); n < 20000 {
		b.Fatalf("the diff has %d lines, want at least 20,000", n)
	}
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			v := newDiffView(newDiffIndex(r), 200, 50, true)
			if len(v.frame()) == 0 {
				b.Fatal("an empty frame")
			}
		}
	})
	b.Run("pager", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if len(colorDiff(r.Diff, true)) == 0 {
				b.Fatal("an empty diff")
			}
		}
	})
}

// The goal, held in the ordinary test run: the first screen of a 300-file,
// 20,000-line push is drawn well under 100 ms (the best of a few runs, so
// that a loaded machine does not fail it), and what it allocates is the
// index, not a copy of the diff.
func TestFirstScreenIsFast(t *testing.T) {
	r := bigPush(t, 300, 67)
	best := time.Hour
	for i := 0; i < 5; i++ {
		start := time.Now()
		v := newDiffView(newDiffIndex(r), 200, 50, true)
		v.frame()
		best = min(best, time.Since(start))
	}
	if best > 100*time.Millisecond {
		t.Errorf("the first screen took %v, want under 100ms", best)
	}
	allocs := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			newDiffView(newDiffIndex(r), 200, 50, true).frame()
		}
	})
	lines := strings.Count(r.Diff, "\n")
	// The index: a word a line and a little a file, and one frame.
	if max := int64(8*lines*2 + 300*512 + 64<<10); allocs.AllocedBytesPerOp() > max {
		t.Errorf("the first screen allocated %d bytes for a %d-byte diff of %d lines, want at most %d", allocs.AllocedBytesPerOp(), len(r.Diff), lines, max)
	}
	t.Logf("first screen: best %v; %d bytes allocated, diff %d bytes, %d lines", best, allocs.AllocedBytesPerOp(), len(r.Diff), lines)
}
