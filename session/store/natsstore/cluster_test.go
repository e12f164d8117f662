package natsstore

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/session/store"
)

// TestNodeLostDuringWorkload: sessions write batches without pause to a
// three-node cluster (Replicas 3) while the journal stream's leader is
// stopped and later started again, the client following to the other
// nodes. Every batch whose Write returned nil is replayed, in order;
// one whose Write failed is absent or there whole, never torn; and the
// writers go on after the failover. AIRLOCK_LONG_TESTS stops the leader
// of the moment several times, for longer.
func TestNodeLostDuringWorkload(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	failover(t, c.URLs(), c.Stop, c.Start, c.WaitForLeader)
}

// TestNodeKilledDuringWorkload is TestNodeLostDuringWorkload with each
// node a process of its own and the leader killed with SIGKILL: what it
// had not written to its disk is gone with it, as when a machine dies.
func TestNodeKilledDuringWorkload(t *testing.T) {
	c := natstest.StartProcessCluster(t, 3)
	failover(t, c.URLs(), c.Kill, c.Start, c.WaitForLeader)
}

func failover(t *testing.T, urls string, stopNode, startNode func(int), wait func()) {
	rounds, down := 1, time.Second
	if os.Getenv("AIRLOCK_LONG_TESTS") != "" {
		rounds, down = 6, 4*time.Second
	}
	st := newReplicated(t, urls)
	const sessions = 3
	ws := make([]*clusterWriter, sessions)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k := range ws {
		ws[k] = startWriter(t, st, k, stop, &wg)
	}
	time.Sleep(300 * time.Millisecond)
	for r := range rounds {
		i := streamLeader(t, st)
		before := ws[0].count()
		stopNode(i)
		time.Sleep(down)
		startNode(i)
		wait()
		// The writers go on: each has a batch acknowledged after the node came back.
		for deadline := time.Now().Add(30 * time.Second); ws[0].count() <= before+1; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no write acknowledged in 30s after node %d was stopped and started; the last error: %v", r, i, ws[0].lastErr())
			}
		}
	}
	close(stop)
	wg.Wait()
	for _, w := range ws {
		w.check(t, st)
	}
}

// clusterWriter is one session's writer and what it was told.
type clusterWriter struct {
	id string
	l  store.Lease
	mu sync.Mutex
	// acked: batches whose Write returned nil, in order; failed: those
	// whose Write failed.
	acked   []string
	failed  map[string]bool
	slowest time.Duration // the longest Write, acknowledged or not
	errs    []error
	// rewrites: journals written again whole after the lease was lost.
	rewrites int
}

// recover does what a session does when its lease was lost (a cluster
// electing leaders for longer than the TTL): the lease taken again
// (Remake), the journal written again whole from memory.
func (w *clusterWriter) recover(l store.Lease, j store.Journal) {
	if l.Here() == nil || l.Remake() != nil {
		return
	}
	w.mu.Lock()
	acked := slices.Clone(w.acked)
	w.mu.Unlock()
	err := j.RewriteWith(func(r journal.Records) error {
		for _, p := range acked {
			r.Add(data, []byte(p))
			r.Add(commit, nil)
		}
		return nil
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rewrites++
	if err != nil {
		w.errs = append(w.errs, fmt.Errorf("rewriting after Remake: %w", err))
	}
}

func (w *clusterWriter) lastErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) == 0 {
		return nil
	}
	return w.errs[len(w.errs)-1]
}

func (w *clusterWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func startWriter(t *testing.T, st *Store, k int, stop chan struct{}, wg *sync.WaitGroup) *clusterWriter {
	l, err := st.Create(store.Meta{Worker: "w"})
	must(t, err)
	t.Cleanup(l.Unlock)
	j, err := l.OpenJournal(isCommit, func(byte, []byte) error { return nil })
	must(t, err)
	w := &clusterWriter{id: l.SessionID(), l: l, failed: map[string]bool{}}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Long enough that a torn one would show.
			p := fmt.Sprintf("s%d-%d:%s", k, i, strings.Repeat("x", 2000+i%3000))
			began := time.Now()
			err := j.Write(batch(p))
			if took := time.Since(began); took > w.slowest {
				w.slowest = took
			}
			w.mu.Lock()
			if err == nil {
				w.acked = append(w.acked, p)
			} else {
				w.failed[p] = true
				w.errs = append(w.errs, err)
			}
			w.mu.Unlock()
			if err != nil {
				w.recover(l, j)
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	return w
}

// check replays the session: the acknowledged batches in order, and
// among them only failed ones, whole.
func (w *clusterWriter) check(t *testing.T, st *Store) {
	t.Helper()
	got := readAll(t, st, w.id)
	i := 0
	for _, p := range got {
		if i < len(w.acked) && p == w.acked[i] {
			i++
			continue
		}
		if !w.failed[p] {
			t.Fatalf("session %s: replayed a batch never written whole (%.20q, %d bytes)", w.id, p, len(p))
		}
	}
	if i != len(w.acked) {
		t.Fatalf("session %s: %d of %d acknowledged batches replayed in order; first missing %.20q", w.id, i, len(w.acked), w.acked[i])
	}
	for _, err := range w.errs {
		t.Logf("session %s: a write failed: %v", w.id, err)
	}
	t.Logf("session %s: %d acknowledged, %d failed, %d replayed, %d rewrites; the slowest write took %v", w.id, len(w.acked), len(w.failed), len(got), w.rewrites, w.slowest.Round(time.Millisecond))
}

// streamLeader is the index of the node leading the journal stream
// (natstest names node i "ni").
func streamLeader(t *testing.T, st *Store) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		info, err := st.stream.Info(context.Background())
		if err != nil || info.Cluster == nil {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(info.Cluster.Leader, "n%d", &i); err == nil {
			return i
		}
	}
	t.Fatal("the journal stream has no leader")
	return -1
}

// newReplicated makes a Store with Replicas 3 on the cluster at urls,
// trying again while the cluster, just started, does not yet count all
// its nodes as peers ("no suitable peers for placement").
func newReplicated(t *testing.T, urls string) *Store {
	t.Helper()
	nc := natstest.Connect(t, urls)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st, err := New(nc, Options{Prefix: "fo", Replicas: 3})
		if err == nil {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}
