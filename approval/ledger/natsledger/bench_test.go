package natsledger_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// BenchmarkAppend measures an append to the NATS ledger (one server, and
// a three-node cluster with Replicas 3, on loopback) against one to the
// file ledger (fsynced), in the same run, alone and from four servers at
// once; the nats lines report their time over the file's (nats/file).
//
//	go test -run XXX -bench Append ./approval/ledger/natsledger
func BenchmarkAppend(b *testing.B) {
	srv := natstest.Server(b, natstest.Options{})
	cluster := natstest.StartCluster(b, 3)
	per := map[string]time.Duration{}
	for _, servers := range []int{1, 4} {
		for _, kind := range []string{"file", "nats", "nats-r3"} {
			name := kind
			if servers > 1 {
				name += "-4-servers"
			}
			b.Run(name, func(b *testing.B) {
				var open func() approval.Ledger
				switch kind {
				case "file":
					fs := fileBench(filepath.Join(b.TempDir(), "ledger.jsonl"))
					open = func() approval.Ledger { return fs.open(b) }
				case "nats":
					s := newStore(b, srv)
					open = func() approval.Ledger { return s.open(b) }
				default:
					s := natsStore{url: cluster.URLs(), prefix: fmt.Sprintf("b%d", prefixes.Add(1)), replicas: 3}
					open = func() approval.Ledger { return s.open(b) }
				}
				ls := make([]approval.Ledger, servers)
				for i := range ls {
					ls[i] = open()
				}
				data := map[string]any{"request": "r-0123456789", "verdict": "approved", "by": "reviewer@host"}
				b.ResetTimer()
				var wg sync.WaitGroup
				for i, l := range ls {
					n := b.N / servers
					if i == 0 {
						n += b.N % servers
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range n {
							if _, err := l.Append(ledger.KindDecision, data); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				per[name] = b.Elapsed() / time.Duration(b.N)
				if f := per[strings.Replace(name, kind, "file", 1)]; kind != "file" && f > 0 {
					b.ReportMetric(float64(per[name])/float64(f), "nats/file")
				}
			})
		}
	}
}

type fileBench string

func (p fileBench) open(b *testing.B) approval.Ledger {
	l, err := ledger.Open(string(p))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}
