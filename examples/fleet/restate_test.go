package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/session/store/natsstore"
)

// TestTheLastToConnectStatesTheConfiguration holds what docs/fleet.md
// warns of: every server and command of a fleet must be given the same
// --nats-replicas and --lease-ttl, because each states the streams' and
// buckets' configuration again as it connects, and the last one decides.
// (Should the store come to keep an existing stream's configuration, this
// fails, and the guide's warning changes with it.)
func TestTheLastToConnectStatesTheConfiguration(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	nc := natstest.Connect(t, c.URLs())
	// The cluster has a leader before every node is known to it as a
	// peer to place a replica on: the first R3 stream may wait for that.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := natsstore.New(nc, natsstore.Options{Prefix: "airlock", Replicas: 3, LeaseTTL: 30 * time.Second})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	if _, err := natsstore.New(nc, natsstore.Options{Prefix: "airlock", Replicas: 1, LeaseTTL: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"airlock_journal", "KV_airlock_sessions", "KV_airlock_leases"} {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := st.CachedInfo().Config
		t.Logf("%s: replicas %d, max age %v", name, cfg.Replicas, cfg.MaxAge)
		if cfg.Replicas != 1 {
			t.Errorf("%s keeps %d replicas after a store with --nats-replicas 1 connected", name, cfg.Replicas)
		}
		if name == "KV_airlock_leases" && cfg.MaxAge != 10*time.Second {
			t.Errorf("%s's entries expire after %v after a store with a lease TTL of 10s connected", name, cfg.MaxAge)
		}
	}
}
