package gittools_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/worker"
)

// benchClient opens a session over a small repository (durable when
// stateRoot is set) and serves it over MCP in memory.
func benchClient(b *testing.B, repo, stateRoot string) *mcp.ClientSession {
	b.Helper()
	var st store.Lease
	if stateRoot != "" {
		d, err := session.CreateStateDir(stateRoot, session.Meta{Worker: "bench", WorkerKey: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		st = d
	}
	return benchClientIn(b, repo, st)
}

// benchClientIn is benchClient with the session's state in lease st (nil:
// in memory only).
func benchClientIn(b *testing.B, repo string, st store.Lease) *mcp.ClientSession {
	b.Helper()
	w := &worker.Worker{
		Name: "bench", Author: worker.Person{Name: "Bench", Email: "bench@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "local", Path: repo, Branch: "main"}, Targets: map[string]*worker.TargetSpec{},
		AutoPull: []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local", Path: repo, Branch: "main"}}},
	}
	l, err := ledger.Open(filepath.Join(b.TempDir(), "ledger.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	opts := session.Options{Gate: approval.NewGate(l, approval.Policy{})}
	if st != nil {
		opts.State = st
	}
	s, err := session.New(context.Background(), w, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	ctx := context.Background()
	sst, ct := mcp.NewInMemoryTransports()
	ss, err := gittools.NewMCPServer(s, "bench").Connect(ctx, sst, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// BenchmarkDurableWriteFile is write_file of 1 KB over MCP, durable
// (saved to a journal on the disk before it answers) against in memory
// only, interleaved call by call in the same run. It reports each one's
// median latency and their ratio (the goal: at most 2).
func BenchmarkDurableWriteFile(b *testing.B) {
	repo := project(b)
	clients := map[string]*mcp.ClientSession{"ephemeral": benchClient(b, repo, ""), "durable": benchClient(b, repo, b.TempDir())}
	content := strings.Repeat("x", 1023) + "\n"
	lat := map[string][]time.Duration{}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, kind := range []string{"ephemeral", "durable"} {
			args := map[string]any{"path": fmt.Sprintf("notes/n%d.txt", i%200), "content": fmt.Sprintf("%d %s", i, content)}
			start := time.Now()
			res, err := clients[kind].CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: args})
			lat[kind] = append(lat[kind], time.Since(start))
			if err != nil || res.IsError {
				b.Fatalf("%s write_file: %v %v", kind, err, res)
			}
		}
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds())
	}
	e, d := p50(lat["ephemeral"]), p50(lat["durable"])
	b.ReportMetric(e, "ephemeral-p50-µs")
	b.ReportMetric(d, "durable-p50-µs")
	if e > 0 {
		b.ReportMetric(d/e, "durable/ephemeral")
	}
}
