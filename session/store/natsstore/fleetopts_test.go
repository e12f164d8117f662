package natsstore

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/natstest"
)

// A Store made with a zero LeaseTTL and Replicas (airlock sessions, which
// only reads) keeps the lease TTL the fleet's servers gave the bucket; a
// new fleet gets the defaults.
func TestZeroOptionsKeepTheFleets(t *testing.T) {
	nc := natstest.Connect(t, natstest.Server(t, natstest.Options{}).ClientURL())
	fresh, err := New(nc, Options{Prefix: "fresh"})
	must(t, err)
	if fresh.ttl != 10*time.Second {
		t.Errorf("a new fleet's lease TTL: %v, want 10s", fresh.ttl)
	}
	_, err = New(nc, Options{Prefix: "fleet", LeaseTTL: 30 * time.Second})
	must(t, err)
	reader, err := New(nc, Options{Prefix: "fleet"})
	must(t, err)
	if reader.ttl != 30*time.Second {
		t.Errorf("a reader's lease TTL: %v, want the fleet's 30s", reader.ttl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := reader.leases.Status(ctx)
	must(t, err)
	if st.TTL() != 30*time.Second {
		t.Errorf("the leases bucket's TTL after a reader: %v, want 30s", st.TTL())
	}
}
