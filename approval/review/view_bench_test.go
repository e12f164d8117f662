package review

import (
	"cmp"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/internal/diffview"
	"github.com/airlock-dev/airlock/approval/review/internal/viewtest"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// firstScreen is a full terminal of 200x50 on which the reviewer looks
// at the first screen and presses q: what it is shown is counted, not
// kept.
type firstScreen struct {
	Terminal // the prompt's part: the view does not use it
	written  int
	// cols, rows and colors: 200x50 on 8 colours where not set; colors
	// -1 is a terminal without colour.
	cols, rows, colors int
}

func (f *firstScreen) Write(p []byte) (int, error) { f.written += len(p); return len(p), nil }
func (f *firstScreen) Color() bool                 { return f.colors >= 0 }
func (f *firstScreen) FullScreen() bool            { return true }
func (f *firstScreen) Size() (int, int, bool)      { return cmp.Or(f.cols, 200), cmp.Or(f.rows, 50), true }
func (f *firstScreen) Colors() int                 { return cmp.Or(f.colors, 8) }
func (f *firstScreen) Raw() (func(), error)        { return func() {}, nil }
func (f *firstScreen) ReadByte() (byte, error)     { return 'q', nil }
func (f *firstScreen) Buffered() int               { return 0 }
func (f *firstScreen) WatchResize() (stop func())  { return func() {} }

var _ diffview.Terminal = (*firstScreen)(nil)

func showFirstScreen(tb testing.TB, r *approval.Request) int {
	return showScreen(tb, r, &firstScreen{})
}

func showScreen(tb testing.TB, r *approval.Request, f *firstScreen) int {
	if shown, _, err := showReview(f, model.New(r), diffview.Options{Shown: "Whole push"}); !shown || err != nil {
		tb.Fatalf("the view was not shown: %v, %v", shown, err)
	}
	return f.written
}

// BenchmarkFirstScreen300Files times what the reviewer waits for after
// pressing d on a 300-file, 20,000-line push: the view's index built and
// its first screen drawn (the real entry point, on a terminal that
// discards what it is shown). Its peer is the pager's path: the whole
// text sanitised and coloured before the pager shows a line.
func BenchmarkFirstScreen300Files(b *testing.B) {
	r := viewtest.BigPush(b, 300, 67)
	if n := strings.Count(r.Diff, "\n"); n < 20000 {
		b.Fatalf("the diff has %d lines, want at least 20,000", n)
	}
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			showFirstScreen(b, r)
		}
	})
	// The first screen on other terminals: unified at 120x40 on 8
	// colours, on 256, without colour; side by side at 200x50 on 256.
	for _, term := range []struct {
		name               string
		cols, rows, colors int
	}{
		{"unified-120x40-8", 120, 40, 8},
		{"unified-120x40-256", 120, 40, 256},
		{"unified-120x40-none", 120, 40, -1},
		{"side-200x50-256", 200, 50, 256},
	} {
		b.Run("view-"+term.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				showScreen(b, r, &firstScreen{cols: term.cols, rows: term.rows, colors: term.colors})
			}
		})
	}
	b.Run("pager", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if len(colorDiff(r.Diff, "", 8)) == 0 {
				b.Fatal("an empty diff")
			}
		}
	})
}

// The goal, held in the ordinary test run: the first screen of a 300-file,
// 20,000-line push is drawn well under 100 ms (the best of a few runs, so
// that a loaded machine does not fail it), and what it allocates is the
// index and a screen (its syntax colour included), not a copy of the diff.
func TestFirstScreenIsFast(t *testing.T) {
	r := viewtest.BigPush(t, 300, 67)
	best, written := time.Hour, 0
	for i := 0; i < 5; i++ {
		start := time.Now()
		written = showFirstScreen(t, r)
		best = min(best, time.Since(start))
	}
	if best > 100*time.Millisecond {
		t.Errorf("the first screen took %v, want under 100ms", best)
	}
	if written > 64<<10 {
		t.Errorf("the first screen wrote %d bytes to the terminal: more than a screen", written)
	}
	allocs := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			showFirstScreen(b, r)
		}
	})
	lines := strings.Count(r.Diff, "\n")
	// The index: a word a line and a little a file; and one screen,
	// with the lexing of the hunks on it (chroma allocates as it
	// matches: some 100 KB for a screen of code, whatever the diff's
	// size), so less than the diff and a screen's lexing.
	const lexing = 160 << 10
	if limit := int64(8*lines*2 + 300*512 + 64<<10); allocs.AllocedBytesPerOp() > limit || allocs.AllocedBytesPerOp() > int64(len(r.Diff)+lexing) {
		t.Errorf("the first screen allocated %d bytes for a %d-byte diff of %d lines, want at most %d and less than the diff and %d", allocs.AllocedBytesPerOp(), len(r.Diff), lines, limit, lexing)
	}
	t.Logf("first screen: best %v; %d bytes allocated, %d written; diff %d bytes, %d lines", best, allocs.AllocedBytesPerOp(), written, len(r.Diff), lines)
}
