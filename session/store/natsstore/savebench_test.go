package natsstore

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/files"
	"github.com/airlock-dev/airlock/worker"
)

// BenchmarkWriteFileSave is a write_file call's work in the session
// (a 1 KB file written, the session saved before the call answers) with
// the local files and with JetStream on loopback, in the same run; it
// reports each one's p50 and their ratio (the goal: at most 2).
func BenchmarkWriteFileSave(b *testing.B) {
	repo := b.TempDir()
	gittest.InitRepo(b, gittest.Env(), repo, "init", map[string]string{"README.md": "# r\n"})
	spec := &worker.TargetSpec{Type: "local", Path: repo, Branch: "main"}
	w := &worker.Worker{
		Name: "bench", Author: worker.Person{Name: "Bench", Email: "bench@example.com"},
		DefaultTarget: spec, Targets: map[string]*worker.TargetSpec{}, AutoPull: []worker.PullSpec{{Path: ".", Source: spec}},
	}
	nst, err := New(connect(b, startServer(b, b.TempDir(), -1)), Options{Prefix: "save"})
	if err != nil {
		b.Fatal(err)
	}
	stores := []store.Store{files.Store{Root: b.TempDir()}, nst}
	var sess [2]*session.Session
	for k, st := range stores {
		l, err := st.Create(store.Meta{Worker: "bench", WorkerKey: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		lg, err := ledger.Open(filepath.Join(b.TempDir(), "ledger.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		defer lg.Close()
		if sess[k], err = session.New(context.Background(), w, session.Options{Gate: approval.NewGate(lg, approval.Policy{}), State: l}); err != nil {
			b.Fatal(err)
		}
		defer sess[k].Close()
	}
	var took [2][]time.Duration
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
	f, n := p50(took[0]), p50(took[1])
	b.ReportMetric(f, "files-p50-µs")
	b.ReportMetric(n, "nats-p50-µs")
	b.ReportMetric(n/f, "ratio")
}
