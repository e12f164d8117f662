package natsqueue_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/broker/natsqueue"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// On a three-node cluster with every entry on three nodes, the queue
// goes on with one node down: a request asked after the stop reaches the
// reviewer, and its decision reaches the gate. The watches a node's stop
// interrupts take up to 20 s to resume; both sides also read the queue
// every couple of seconds, which bounds the wait (without it this test
// took 20 s one run in two).
func TestQueueOnAClusterWithANodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := natstest.StartCluster(t, 3)
	o := natsqueue.Options{Replicas: 3, ClaimWait: 10 * time.Second}
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys})
	p, err := natsqueue.Publish(g, natstest.Connect(t, c.URLs()), o, broker.ServerInfo{PID: os.Getpid(), Worker: "w", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	o.By = "alice"
	r, err := natsqueue.Watch(context.Background(), natstest.Connect(t, c.URLs()), o)
	if err != nil {
		t.Fatal(err)
	}
	r.SetKey(approvaltest.ReviewerKey())
	t.Cleanup(r.Close)
	s := &server{gate: g}
	first, _ := s.ask(t, r, requestFor("before"))

	c.Stop(0)
	c.WaitForLeader()
	start := time.Now()
	second, in := s.ask(t, r, requestFor("after"))
	t.Logf("a request asked with a node down seen in %v", time.Since(start))
	var d approval.Decision
	eventually(t, "the decision goes through with a node down", func() bool {
		d, err = in.Decide(approval.Decision{Verdict: approval.Approve})
		return err == nil
	})
	t.Logf("and decided in %v", time.Since(start))
	if _, gr, err := wait(t, second); err != nil || !gr.Valid() || d.By != "alice" {
		t.Fatalf("the request asked with a node down: %+v %v", d, err)
	}
	if in := incoming(r, first.Request().ID); in == nil {
		t.Fatal("the request asked before the stop left the reviewer")
	}
}
