package hub

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/mcptest"
)

// The HTTP server's sessions under load (issue 15): 50 sessions of 1,000
// files each on one server, against one session, at the same load.
//
//   - serial: one call at a time, going round the sessions: what holding
//     50 sandboxes costs each call (state size, locks, the GC).
//   - concurrent: 50 clients calling at once, in 50 sandboxes or all in
//     one (each client its own MCP session of the one sandbox): what
//     sharing the server costs, at equal concurrency.
//
// Reported: the per-call p50 and p90 in µs, and the heap each sandbox
// costs against the content it holds (B/session, x-content).
func BenchmarkHTTPSessions(b *testing.B) {
	const files, size = 1000, 2048
	for _, c := range []struct {
		name              string
		sandboxes, client int
		concurrent        bool
	}{
		{"sessions=1/serial", 1, 1, false},
		{"sessions=50/serial", 50, 50, false},
		{"sessions=1/concurrent=50", 1, 50, true},
		{"sessions=50/concurrent=50", 50, 50, true},
	} {
		ctx := context.Background()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		endpoint, sbs := sandboxesAt(b, "", 64, time.Hour)
		clients := make([]*mcp.ClientSession, c.client)
		var first *mcptest.Headers
		for i := range clients {
			url, token := endpoint, "server-token"
			if c.sandboxes == 1 && first != nil {
				url, token = first.URL, first.Own // another MCP session of the one sandbox
			}
			cs, h, err := mcptest.ConnectHTTP(ctx, b, url, token)
			if err != nil {
				b.Fatal(err)
			}
			clients[i] = cs
			if first == nil {
				first = h
			}
		}
		content := make([]byte, size)
		sbs.mu.Lock()
		live := len(sbs.live)
		for _, sb := range sbs.live {
			ws := sb.sess.Workspace()
			for f := range files {
				for j := range content {
					content[j] = byte('a' + (f+j)%26)
				}
				if err := ws.WriteFile(fmt.Sprintf("src/d%02d/f%04d.txt", f%20, f), content, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		sbs.mu.Unlock()
		if live != c.sandboxes {
			b.Fatalf("%d sandboxes, want %d", live, c.sandboxes)
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		perSession := float64(after.HeapInuse-before.HeapInuse) / float64(c.sandboxes)

		b.Run(c.name, func(b *testing.B) {
			lat := make([]time.Duration, b.N)
			call := func(cs *mcp.ClientSession, i int, rng *rand.Rand) {
				f := rng.IntN(files)
				path := fmt.Sprintf("src/d%02d/f%04d.txt", f%20, f)
				args := map[string]any{"path": path}
				name := "read_file"
				if i%4 == 3 {
					name, args["content"] = "write_file", fmt.Sprintf("call %d\n", i)
				}
				start := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				lat[i] = time.Since(start)
				if err != nil || res.IsError {
					b.Errorf("%s %s: %v %s", name, path, err, mcptest.ResultText(res))
				}
			}
			b.ResetTimer()
			if !c.concurrent {
				rng := rand.New(rand.NewPCG(1, 2))
				for i := range b.N {
					call(clients[i%len(clients)], i, rng)
				}
			} else {
				var wg sync.WaitGroup
				for k, cs := range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(k), 2))
						for i := k; i < b.N; i += len(clients) {
							call(cs, i, rng)
						}
					}()
				}
				wg.Wait()
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds()), "p90-µs")
			b.ReportMetric(perSession, "B/session")
			b.ReportMetric(perSession/float64(files*size), "x-content")
		})
		for _, cs := range clients {
			cs.Close()
		}
	}
}
