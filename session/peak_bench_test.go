package session_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
)

// heapPeak samples the heap until stop is called and returns the largest
// values seen: of the heap's objects (garbage not yet collected included:
// with GOGC=100 the heap runs up to twice what is live before a
// collection), and of what the last collection found live.
func heapPeak() (stop func() (heap, live uint64)) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	var peak, livePeak uint64
	var mu sync.Mutex
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			metrics.Read(sample)
			mu.Lock()
			peak = max(peak, sample[0].Value.Uint64())
			livePeak = max(livePeak, sample[1].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return peak, livePeak
	}
}

var peakRound int

// BenchmarkPullDiffPushPeak is issue 14's bounded peaks: a worker pulls a
// 32 MiB base lazily, rewrites every file (32 MiB of new content), and
// pushes; the peak of the heap during the pull, and during the push (its
// request's diff reads every old file through the cache and every new
// one), is reported against the content the session holds then: the
// heap's objects with the garbage a collection has not yet reached, and
// what collections found live. Goal: at most 1.5x.
func BenchmarkPullDiffPushPeak(b *testing.B) {
	const files, size = 128, 256 << 10
	base := map[string]string{}
	for f := 0; f < files; f++ {
		base[fmt.Sprintf("d%d/f%03d.txt", f%8, f)] = strings.Repeat(fmt.Sprintf("base line %d\n", f), size/16)
	}
	r := repo(b, true, base)
	var pullRatio, pushRatio, pushLive float64
	for i := 0; i < b.N; i++ {
		peakRound++ // each round pushes over the last one's push
		runtime.GC()
		before := runtime.MemStats{}
		runtime.ReadMemStats(&before)
		stop := heapPeak()
		e := newEnv(b, r, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}}})
		pullPeak, _ := stop()
		live, _ := e.s.Workspace().Usage()
		// The pull holds trees only; what it reads of the content is its
		// peak's excess over the heap before.
		pullRatio = float64(pullPeak-before.HeapAlloc) / float64(live.Bytes)

		for f := 0; f < files; f++ {
			e.write(b, fmt.Sprintf("d%d/f%03d.txt", f%8, f), strings.Repeat(fmt.Sprintf("new line %d %d\n", peakRound, f), size/16))
		}
		c, err := e.s.Stage(nil, "rewrite")
		must(b, err)
		runtime.GC()
		var held runtime.MemStats
		runtime.ReadMemStats(&held)
		stop = heapPeak()
		_, err = e.s.Push(context.Background(), c.ID.String(), "", nil)
		pushPeak, livePeak := stop()
		must(b, err)
		live, _ = e.s.Workspace().Usage()
		// Held: the new content (in the workspace and, shared, the store),
		// plus the old content the diff reads through the cache.
		pushRatio = float64(pushPeak-before.HeapAlloc) / float64(2*live.Bytes)
		pushLive = float64(livePeak-before.HeapAlloc) / float64(2*live.Bytes)
		e.s.Close()
	}
	b.ReportMetric(pullRatio, "pull-peak/content")
	b.ReportMetric(pushRatio, "push-peak/content")
	b.ReportMetric(pushLive, "push-live-peak/content")
}
