package natsstore

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/files"
	"github.com/airlock-dev/airlock/worker"
)

// benchWorker is a worker whose session pulls a one-file git repository.
func benchWorker(b testing.TB) *worker.Worker {
	repo := b.TempDir()
	gittest.InitRepo(b, gittest.Env(), repo, "init", map[string]string{"README.md": "# r\n"})
	spec := &worker.TargetSpec{Type: "local", Path: repo, Branch: "main"}
	return &worker.Worker{
		Name: "bench", Author: worker.Person{Name: "Bench", Email: "bench@example.com"},
		DefaultTarget: spec, Targets: map[string]*worker.TargetSpec{}, AutoPull: []worker.PullSpec{{Path: ".", Source: spec}},
	}
}

// benchOptions are a session's options over lease l, with a ledger of
// its own.
func benchOptions(b testing.TB, l store.Lease) session.Options {
	lg, err := ledger.Open(filepath.Join(b.TempDir(), "ledger.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = lg.Close() })
	return session.Options{Gate: approval.NewGate(lg, approval.Policy{}), State: l, Warn: func(string) {}}
}

// BenchmarkResumeTenThousandFiles is the store's part of moving a
// session of 10,000 files to another server: its journal (written
// through the session, ten files a call) opened and replayed, the
// session resumed whole, then let go. The local files and JetStream on
// loopback in the same run; it reports each one's mean and their ratio.
func BenchmarkResumeTenThousandFiles(b *testing.B) {
	w := benchWorker(b)
	nst, err := New(connect(b, startServer(b, b.TempDir(), -1)), Options{Prefix: "resume"})
	if err != nil {
		b.Fatal(err)
	}
	stores := []store.Store{files.Store{Root: b.TempDir()}, nst}
	var ids [2]string
	content := make([]byte, 512)
	for k, st := range stores {
		l, err := st.Create(store.Meta{Worker: "bench", WorkerKey: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		s, err := session.New(context.Background(), w, benchOptions(b, l))
		if err != nil {
			b.Fatal(err)
		}
		for i := range 10000 {
			copy(content, fmt.Sprintf("file %d\n", i))
			if err := s.Workspace().WriteFile(fmt.Sprintf("d%02d/f%05d.txt", i%100, i), content, 0o644); err != nil {
				b.Fatal(err)
			}
			if i%10 == 9 {
				if err := s.Save(); err != nil {
					b.Fatal(err)
				}
			}
		}
		ids[k] = l.SessionID()
		s.Close()
	}
	var took [2]time.Duration
	for b.Loop() {
		for k, st := range stores {
			start := time.Now()
			l, err := st.Open(ids[k])
			if err != nil {
				b.Fatal(err)
			}
			s, _, err := session.Resume(context.Background(), w, benchOptions(b, l))
			if err != nil {
				b.Fatal(err)
			}
			took[k] += time.Since(start)
			if n := countFiles(b, s.Workspace(), "."); n != 10001 {
				b.Fatalf("resumed with %d files, want 10001", n)
			}
			s.Close()
		}
	}
	f, n := float64(took[0].Milliseconds())/float64(b.N), float64(took[1].Milliseconds())/float64(b.N)
	b.ReportMetric(f, "files-ms")
	b.ReportMetric(n, "nats-ms")
	b.ReportMetric(n/f, "ratio")
}

// countFiles counts the files under dir.
func countFiles(b *testing.B, ws *memfs.Workspace, dir string) int {
	es, err := ws.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.IsDir() {
			n += countFiles(b, ws, path.Join(dir, e.Name()))
		} else {
			n++
		}
	}
	return n
}
