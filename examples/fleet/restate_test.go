package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/broker/natsqueue"
	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/session/store/natsstore"
)

// TestAStoreWithoutFlagsKeepsTheFleets holds what docs/fleet.md says
// of --nats-replicas and --lease-ttl: a server or command given neither
// keeps the streams' and buckets' configuration as the fleet has it (a
// reviewer's airlock review never scales an R3 fleet down to R1), and
// one given them states it again, for every server; but no server or
// reviewer changes the decisions bucket's configuration (servers may not
// write it: docs/fleet.md), which keeps the replicas it was made with.
func TestAStoreWithoutFlagsKeepsTheFleets(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	nc := natstest.Connect(t, c.URLs())
	// The cluster has a leader before every node is known to it as a
	// peer to place a replica on: the first R3 stream may wait for that.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := natsstore.New(nc, natsstore.Options{Prefix: "airlock", Replicas: 3, LeaseTTL: 30 * time.Second})
		if err == nil {
			var rv *broker.Reviewer
			if rv, err = natsqueue.Watch(ctx, nc, natsqueue.Options{Prefix: "airlock", Replicas: 3}); err == nil {
				rv.Close()
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string, replicas int, ttl time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if st, err := js.Stream(ctx, "KV_airlock_reviews_decisions"); err != nil || st.CachedInfo().Config.Replicas != 3 {
			t.Errorf("%s: the decisions bucket was changed (%v)", when, err)
		}
		for _, name := range []string{"airlock_journal", "KV_airlock_sessions", "KV_airlock_leases", "KV_airlock_reviews", "KV_airlock_reviews_outcomes", "OBJ_airlock_reviews_bodies"} {
			st, err := js.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			cfg := st.CachedInfo().Config
			if cfg.Replicas != replicas {
				t.Errorf("%s: %s keeps %d replicas, want %d", when, name, cfg.Replicas, replicas)
			}
			if name == "KV_airlock_leases" && cfg.MaxAge != ttl {
				t.Errorf("%s: %s's entries expire after %v, want %v", when, name, cfg.MaxAge, ttl)
			}
		}
	}
	if _, err := natsstore.New(nc, natsstore.Options{Prefix: "airlock"}); err != nil {
		t.Fatal(err)
	}
	rv, err := natsqueue.Watch(ctx, nc, natsqueue.Options{Prefix: "airlock"})
	if err != nil {
		t.Fatal(err)
	}
	rv.Close()
	check("after a store without flags", 3, 30*time.Second)
	if _, err := natsstore.New(nc, natsstore.Options{Prefix: "airlock", Replicas: 1, LeaseTTL: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	p, err := natsqueue.Publish(approval.NewGate(nil, approval.Policy{}), nc, natsqueue.Options{Prefix: "airlock", Replicas: 1}, broker.ServerInfo{})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Close()
	check("after a server given --nats-replicas 1 --lease-ttl 10s", 1, 10*time.Second)
}
