package natsstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/files"
)

// BenchmarkWriteFileSave is a write_file call's work in the session
// (a 1 KB file written, the session saved before the call answers) with
// the local files and with JetStream on loopback, in the same run: the
// server in this process (as the other tests run it), and in a process
// of its own (as a fleet runs it: its work and its garbage are not this
// process's). It reports each one's p50 and their ratios to the local
// store's (the goal: at most 2).
func BenchmarkWriteFileSave(b *testing.B) {
	w := benchWorker(b)
	inproc, err := New(connect(b, startServer(b, b.TempDir(), -1)), Options{Prefix: "save"})
	if err != nil {
		b.Fatal(err)
	}
	proc, err := New(natstest.Connect(b, natstest.Process(b, natstest.Options{}).URL()), Options{Prefix: "save"})
	if err != nil {
		b.Fatal(err)
	}
	stores := []store.Store{files.Store{Root: b.TempDir()}, inproc, proc}
	var sess [3]*session.Session
	for k, st := range stores {
		l, err := st.Create(store.Meta{Worker: "bench", WorkerKey: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if sess[k], err = session.New(context.Background(), w, benchOptions(b, l)); err != nil {
			b.Fatal(err)
		}
		defer sess[k].Close()
	}
	var took [3][]time.Duration
	content := make([]byte, 1024)
	i := 0
	for b.Loop() {
		i++
		for k, s := range sess {
			copy(content, fmt.Sprint(i))
			start := time.Now()
			if err := s.Workspace().WriteFile(fmt.Sprintf("f%d.txt", i%100), content, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := s.Save(); err != nil {
				b.Fatal(err)
			}
			took[k] = append(took[k], time.Since(start))
		}
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	f, n, p := p50(took[0]), p50(took[1]), p50(took[2])
	b.ReportMetric(f, "files-p50-µs")
	b.ReportMetric(n, "nats-p50-µs")
	b.ReportMetric(n/f, "ratio")
	b.ReportMetric(p, "nats-proc-p50-µs")
	b.ReportMetric(p/f, "proc-ratio")
}
