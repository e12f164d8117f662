package diffview

import (
	"testing"

	"github.com/airlock-dev/airlock/approval/review/internal/viewtest"
)

// BenchmarkFrame times the view's drawing alone, per screen and per row
// drawn, on a 300-file push: "redraw" is the same screen again (a key
// that changes nothing, a resize: whatever is cached is), "page" a page
// down each time, going round the push, and "fresh" the same with the
// hunks forgotten first, so that every screen pays its hunks' pairs and
// lexing as the first sight of them does.
func BenchmarkFrame(b *testing.B) {
	r := viewtest.BigPush(b, 300, 67)
	ix := newDiffIndex(r, testWords)
	for _, size := range []struct {
		name       string
		cols, rows int
	}{{"80x24", 80, 24}, {"120x40", 120, 40}, {"200x50", 200, 50}} {
		for _, mode := range []string{"redraw", "page", "fresh"} {
			page := mode != "redraw"
			b.Run(size.name+"/"+mode, func(b *testing.B) {
				v := newDiffView(ix, size.cols, size.rows, true)
				v.frame()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if page {
						v.top += v.body()
						if v.top >= v.maxTop() {
							v.top = 0
						}
					}
					if mode == "fresh" {
						forgetHunks(v)
					}
					v.frame()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*v.body()), "ns/row")
			})
		}
	}
}

// forgetHunks drops what drawing has worked out of the hunks.
func forgetHunks(v *diffView) {
	if v.hi != nil {
		v.hi.c = newHiCache(v.ix, v.hi.pal)
		clear(v.hi.side.rows)
	}
}
