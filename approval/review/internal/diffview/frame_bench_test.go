package diffview

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// editedPush is a diff of files edited, as a reviewer mostly reads: in
// each file hunks of Go with context, a block of changed lines (each
// paired with its replacement, one character changed) and a line added.
func editedPush(files, hunks int) *approval.Request {
	var b strings.Builder
	for f := range files {
		fmt.Fprintf(&b, "diff --git a/pkg%d/file%d.go b/pkg%d/file%d.go\nindex 1111111..2222222 100644\n--- a/pkg%d/file%d.go\n+++ b/pkg%d/file%d.go\n", f/30, f, f/30, f, f/30, f, f/30, f)
		for h := range hunks {
			at := 1 + h*20
			fmt.Fprintf(&b, "@@ -%d,9 +%d,10 @@ func f%d() {\n", at, at, h)
			fmt.Fprintf(&b, " // compute%d says how much is left after the reviewer's limits are applied.\n", h)
			fmt.Fprintf(&b, " func compute%d(ctx context.Context, limit int) (int, error) {\n", h)
			fmt.Fprintf(&b, " \tif limit <= 0 {\n \t\treturn 0, fmt.Errorf(\"limit %%d: want more than 0\", limit)\n \t}\n")
			fmt.Fprintf(&b, "-\ttotal := sum(ctx, \"the sum of every value read so far\", limit, %d)\n", h)
			fmt.Fprintf(&b, "-\treturn total - 41, nil\n")
			fmt.Fprintf(&b, "+\ttotal := sum(ctx, \"the sum of every value read so far\", limit, %d)\n", h+1)
			fmt.Fprintf(&b, "+\treturn total - 42, nil\n")
			fmt.Fprintf(&b, "+\t// and the rest is logged\n")
			fmt.Fprintf(&b, " }\n \n")
		}
	}
	return &approval.Request{Diff: b.String()}
}

// BenchmarkFrame times the view's drawing alone, per screen and per row
// drawn, on a 300-file push of edited Go files: "redraw" is the same
// screen again (a key that changes nothing: whatever is cached is),
// "page" a page down each time, going round the push, and "fresh" the
// same with the hunks forgotten first, so that every screen pays its
// hunks' pairs, words and lexing as the first sight of them does; on 8
// colours and on 256.
func BenchmarkFrame(b *testing.B) {
	ix := newDiffIndex(model.New(editedPush(300, 4)), testWords)
	for _, size := range []struct {
		name       string
		cols, rows int
	}{{"80x24", 80, 24}, {"120x40", 120, 40}, {"200x50", 200, 50}} {
		for _, colors := range []int{8, 256} {
			for _, mode := range []string{"redraw", "page", "fresh"} {
				page := mode != "redraw"
				b.Run(fmt.Sprintf("%s/%d/%s", size.name, colors, mode), func(b *testing.B) {
					v := newDiffView(ix, size.cols, size.rows, true)
					setColors(v, colors)
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
}

func setColors(v *diffView, colors int) { v.hi = newRender(v.ix, colors) }

// forgetHunks drops what drawing has worked out of the hunks.
func forgetHunks(v *diffView) {
	v.hi.c = newHiCache(v.ix, v.hi.pal)
	clear(v.hi.side.rows)
}
