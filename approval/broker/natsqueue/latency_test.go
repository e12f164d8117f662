package natsqueue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
)

// seenAfter submits n requests one after another and returns, for each,
// the time from its asking (Submit) to the reviewer's having it
// (Pending), sorted. Each is withdrawn before the next.
func seenAfter(tb testing.TB, g *approval.Gate, r *broker.Reviewer, n int) []time.Duration {
	tb.Helper()
	out := make([]time.Duration, 0, n)
	for i := range n {
		req := requestFor(fmt.Sprintf("latency-%d-%d", time.Now().UnixNano(), i))
		start := time.Now()
		tk, err := g.Submit(req, nil)
		if err != nil {
			tb.Fatal(err)
		}
		id := tk.Request().ID
		deadline := time.After(10 * time.Second)
		for incoming(r, id) == nil {
			select {
			case <-r.Changed():
			case <-time.After(time.Millisecond):
			case <-deadline:
				tb.Fatalf("request %s not seen in 10 s", id)
			}
		}
		out = append(out, time.Since(start))
		if err := g.Withdraw(id, "measured"); err != nil {
			tb.Fatal(err)
		}
		for incoming(r, id) != nil {
			select {
			case <-r.Changed():
			case <-time.After(time.Millisecond):
			}
		}
	}
	slices.Sort(out)
	return out
}

func percentile(d []time.Duration, p float64) time.Duration {
	return d[int(float64(len(d)-1)*p)]
}

// A reviewer on another connection sees a request within 100 ms of its
// asking (the goal). Loosely: p99 of 40 requests, with the race
// detector on a shared machine, in the best of three tries, so that a
// moment's load on the machine does not fail it and a queue that is slow
// every time does.
func TestRequestSeenWithin100ms(t *testing.T) {
	f := newFleet(t)
	a := f.server("writer-a")
	r, _ := f.reviewer("alice")
	var p99 time.Duration
	for try := range 3 {
		d := seenAfter(t, a.gate, r, 40)
		p99 = percentile(d, 0.99)
		t.Logf("try %d: submit to seen: p50 %v, p99 %v", try+1, percentile(d, 0.5), p99)
		if p99 < 100*time.Millisecond {
			return
		}
	}
	t.Fatalf("p99 %v from asking to a reviewer's seeing, want under 100 ms", p99)
}

// BenchmarkRequestSeen measures, in one run, the time from a request's
// asking to a reviewer's having it, through the fleet's queue and through
// the Unix-socket broker, and reports both and their ratio.
func BenchmarkRequestSeen(b *testing.B) {
	nq := newFleet(b)
	qa := nq.server("writer-a")
	qr, _ := nq.reviewer("alice")

	dir, err := os.MkdirTemp("", "al")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	dir = filepath.Join(dir, "run")
	g := approval.NewGate(approvaltest.NewLedger(b), approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys})
	br, err := broker.Listen(g, dir, broker.ServerInfo{PID: os.Getpid(), Worker: "writer-s", Started: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	sr, err := broker.Watch(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sr.Close)
	n := max(b.N, 20)
	b.ResetTimer()
	viaQueue := seenAfter(b, qa.gate, qr, n)
	viaSocket := seenAfter(b, g, sr, n)
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(viaQueue, 0.5)), "queue-p50-ms")
	b.ReportMetric(ms(percentile(viaQueue, 0.99)), "queue-p99-ms")
	b.ReportMetric(ms(percentile(viaSocket, 0.5)), "socket-p50-ms")
	b.ReportMetric(ms(percentile(viaSocket, 0.99)), "socket-p99-ms")
	b.ReportMetric(ms(percentile(viaQueue, 0.5))/ms(percentile(viaSocket, 0.5)), "p50-ratio")
	b.ReportMetric(ms(percentile(viaQueue, 0.99))/ms(percentile(viaSocket, 0.99)), "p99-ratio")
	b.ReportMetric(0, "ns/op")
}
