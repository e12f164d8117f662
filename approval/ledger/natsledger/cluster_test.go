package natsledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger/ledgertest"
	"github.com/airlock-dev/airlock/approval/ledger/natsledger"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// A three-node cluster (Replicas 3) loses the stream's leader in the
// middle of four servers' concurrent appends, and gets it back: every
// acknowledged record is in the ledger once, in one chain (0 lost, 0
// forks), and the stream is still R3 whatever a server started with
// other flags said.
func TestClusterNodeDownDuringAppends(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	began := time.Now()
	c := natstest.StartCluster(t, 3)
	open := func(replicas int) *natsledger.Ledger {
		l, err := natsledger.New(natstest.Connect(t, c.URLs()), natsledger.Options{Prefix: "fleet", Replicas: replicas})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	open(3)
	t.Logf("%v: the stream made", time.Since(began))
	const servers, each = 4, 60
	ls := make([]approval.Ledger, servers)
	for i := range ls {
		ls[i] = open(1) // a server started with other flags changes nothing
	}
	leader := streamLeader(t, c)
	failed := 0
	acked := ledgertest.ConcurrentAppends(t, ls, each, &failed, func(done int) {
		if done == servers*each/3 {
			// In an appender's goroutine: the others go on meanwhile.
			c.Stop(leader)
			t.Logf("%v: stopped node %d, the stream's leader, after %d appends", time.Since(began), leader, done)
		}
	})
	t.Logf("%v: %d appends acknowledged, %d failed", time.Since(began), len(acked), failed)
	if len(acked) < servers*each*9/10 {
		t.Fatalf("only %d of %d appends were acknowledged", len(acked), servers*each)
	}
	// Read at once after the node is back: a reader's consumer may be
	// on it while it catches up, and must read the stream whole anyway.
	c.Start(leader)
	for range 4 {
		l := open(1)
		recs, err := l.Records()
		if err != nil {
			t.Fatal(err)
		}
		ledgertest.AllOnce(t, recs, acked)
		rep, err := l.Verify()
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.Records != len(recs) || len(recs) < len(acked) {
			t.Fatalf("verify: %d records of %d, broken %v", rep.Records, len(recs), rep.Broken)
		}
	}
	if n := streamReplicas(t, c); n != 3 {
		t.Fatalf("the stream has %d replicas, want 3", n)
	}
}

func jsOn(t *testing.T, c *natstest.Cluster) jetstream.JetStream {
	js, err := jetstream.New(natstest.Connect(t, c.URLs()))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// streamLeader is the node that leads the ledger's stream.
func streamLeader(t *testing.T, c *natstest.Cluster) int {
	t.Helper()
	st, err := jsOn(t, c).Stream(context.Background(), "fleet_ledger")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %+v, %v", info, err)
	}
	for i, s := range c.Servers {
		if s != nil && s.Name() == info.Cluster.Leader {
			return i
		}
	}
	t.Fatalf("no node is %q", info.Cluster.Leader)
	return 0
}

func streamReplicas(t *testing.T, c *natstest.Cluster) int {
	t.Helper()
	st, err := jsOn(t, c).Stream(context.Background(), "fleet_ledger")
	if err != nil {
		t.Fatal(err)
	}
	return st.CachedInfo().Config.Replicas
}
