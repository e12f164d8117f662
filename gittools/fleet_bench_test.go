package gittools_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/files"
	"github.com/airlock-dev/airlock/session/store/natsstore"
)

// BenchmarkFleetWriteFile is issue 25's write_file goal as a client sees
// it: write_file of 1 KB over MCP (in memory), the session saved before
// the call answers, with the local store and with JetStream on loopback
// (a server in this process), interleaved call by call in the same run.
// It reports each one's median and their ratio (the goal: at most 2).
func BenchmarkFleetWriteFile(b *testing.B) {
	repo := project(b)
	nst, err := natsstore.New(natstest.Connect(b, natstest.Server(b, natstest.Options{}).ClientURL()), natsstore.Options{Prefix: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	lease := func(st store.Store) store.Lease {
		l, err := st.Create(store.Meta{Worker: "bench", WorkerKey: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	kinds := []string{"local", "nats"}
	clients := map[string]*mcp.ClientSession{
		"local": benchClientIn(b, repo, lease(files.Store{Root: b.TempDir()})),
		"nats":  benchClientIn(b, repo, lease(nst)),
	}
	content := strings.Repeat("x", 1023) + "\n"
	lat := map[string][]time.Duration{}
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		for _, kind := range kinds {
			args := map[string]any{"path": fmt.Sprintf("notes/n%d.txt", i%200), "content": fmt.Sprintf("%d %s", i, content)}
			start := time.Now()
			res, err := clients[kind].CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: args})
			lat[kind] = append(lat[kind], time.Since(start))
			if err != nil || res.IsError {
				b.Fatalf("%s write_file: %v %v", kind, err, res)
			}
		}
	}
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds())
	}
	l, n := p50(lat["local"]), p50(lat["nats"])
	b.ReportMetric(l, "local-p50-µs")
	b.ReportMetric(n, "nats-p50-µs")
	if l > 0 {
		b.ReportMetric(n/l, "nats/local")
	}
}
