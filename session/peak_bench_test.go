package session_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/heapwatch"
)

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
		stop := heapwatch.Start()
		e := newEnv(b, r, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}}})
		pull := stop()
		live, _ := e.s.Workspace().Usage()
		// The pull holds trees only; what it reads of the content is its
		// peak's excess over the heap before.
		pullRatio = float64(pull.Heap) / float64(live.Bytes)

		for f := 0; f < files; f++ {
			e.write(b, fmt.Sprintf("d%d/f%03d.txt", f%8, f), strings.Repeat(fmt.Sprintf("new line %d %d\n", peakRound, f), size/16))
		}
		c, err := e.s.Stage(nil, "rewrite")
		must(b, err)
		stop = heapwatch.Start()
		_, err = e.s.Push(context.Background(), c.ID.String(), "", nil)
		push := stop()
		must(b, err)
		live, _ = e.s.Workspace().Usage()
		// Held: the new content (in the workspace and, shared, the store),
		// plus the old content the diff reads through the cache.
		// The peaks are above the heap with the new content already in
		// it; the old content the diff reads comes on top.
		pushRatio = float64(push.Heap+uint64(live.Bytes)) / float64(2*live.Bytes)
		pushLive = float64(push.Live+uint64(live.Bytes)) / float64(2*live.Bytes)
		e.s.Close()
	}
	b.ReportMetric(pullRatio, "pull-peak/content")
	b.ReportMetric(pushRatio, "push-peak/content")
	b.ReportMetric(pushLive, "push-live-peak/content")
}
