package gittools_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
)

// peakHeap runs fn and returns how far the live heap rose above where it
// stood before, sampled every millisecond.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if v := read(); v > base {
					mu.Lock()
					peak = max(peak, v-base)
					mu.Unlock()
				}
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	return peak
}

// git_diff and the push request of a big change hold a page of the diff,
// not the whole of it several times over.
func TestBigDiffMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocates hundreds of MiB; .ci/run runs it without the race detector")
	}
	h := newHarness(t, approval.Policy{Mode: approval.ModeNever}, time.Second)
	const files, size = 48, 1 << 20
	line := strings.Repeat("x", 63) + "\n"
	content := strings.Repeat(line, size/len(line))
	for i := 0; i < files; i++ {
		h.call("write_file", map[string]any{"path": fmt.Sprintf("big/%02d.txt", i), "content": content})
	}
	total := uint64(files * size)
	var out string
	peak := peakHeap(func() { out = h.call("git_diff", nil) })
	t.Logf("git_diff of %d MiB: heap peak +%d MiB", total>>20, peak>>20)
	if peak > 2*total {
		t.Errorf("git_diff of %d MiB rose the heap by %d MiB", total>>20, peak>>20)
	}
	mustContain(t, "git_diff", out, "[cut:")
	h.call("git_stage", map[string]any{"message": "big"})
	// The request keeps up to 32 MiB of diff text for the reviewer, which
	// a builder grows to by doubling.
	peak = peakHeap(func() { h.try("git_push", nil) })
	t.Logf("push request of %d MiB: heap peak +%d MiB", total>>20, peak>>20)
	if peak > 2*total+96<<20 {
		t.Errorf("a push request of %d MiB rose the heap by %d MiB", total>>20, peak>>20)
	}
}
