package session_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

// BenchmarkDurableStage10k stages 10,000 new 2 KB files, durable (saved to
// a journal on the disk, as the call would be before it answers) against
// in memory only, in the same run. The files were written, and saved, by
// earlier calls: what is timed is the stage and its save. It reports each
// one's time per stage and their ratio (the goal: at most 1.5).
func BenchmarkDurableStage10k(b *testing.B) {
	bare := repo(b, true, map[string]string{"README.md": "# r\n"})
	content := []byte(strings.Repeat("y", 2047) + "\n")
	open := func(durable bool) *session.Session {
		w := &worker.Worker{
			Name: "bench", Author: worker.Person{Name: "Bench", Email: "bench@example.com"},
			DefaultTarget: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}, Targets: map[string]*worker.TargetSpec{},
			AutoPull: []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}}},
			Limits:   memfs.Limits{MaxFiles: 50000, MaxTotalBytes: 1 << 30},
		}
		l, err := ledger.Open(filepath.Join(b.TempDir(), "ledger.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		opts := session.Options{Gate: approval.NewGate(l, approval.Policy{})}
		if durable {
			if opts.State, err = session.CreateStateDir(b.TempDir(), session.Meta{Worker: "bench", WorkerKey: "bench"}); err != nil {
				b.Fatal(err)
			}
		}
		s, err := session.New(context.Background(), w, opts)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 10000; i++ {
			c := append([]byte(fmt.Sprintf("%d ", i)), content...)
			if err := s.Workspace().WriteFile(fmt.Sprintf("pkg%02d/sub%d/f%05d.txt", i%50, i%7, i), c, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Save(); err != nil {
			b.Fatal(err)
		}
		return s
	}
	var took [2]time.Duration
	for i := 0; i < b.N; i++ {
		for k, durable := range []bool{false, true} {
			b.StopTimer()
			s := open(durable)
			runtime.GC() // the set-up's garbage is not the stage's to collect
			b.StartTimer()
			start := time.Now()
			if _, err := s.Stage(nil, "ten thousand files"); err != nil {
				b.Fatal(err)
			}
			if err := s.Save(); err != nil {
				b.Fatal(err)
			}
			took[k] += time.Since(start)
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	}
	e, d := took[0].Seconds()*1e3/float64(b.N), took[1].Seconds()*1e3/float64(b.N)
	b.ReportMetric(e, "ephemeral-ms")
	b.ReportMetric(d, "durable-ms")
	b.ReportMetric(d/e, "durable/ephemeral")
}
