package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestClusterKeepsReplicatedWritesWithANodeDown writes to an R3 stream,
// stops a node, writes more, starts it again: every acknowledged message
// is there.
func TestClusterKeepsReplicatedWritesWithANodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := StartCluster(t, 3)
	js, err := jetstream.New(Connect(t, c.URLs()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	acked := 0
	publish := func(n int) {
		for range n {
			for {
				if _, err := js.Publish(ctx, "t.x", []byte("m")); err == nil {
					acked++
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("publishing: %v", ctx.Err())
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	publish(10)
	c.Stop(1)
	publish(10)
	c.Start(1)
	publish(10)
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(acked) {
		t.Fatalf("the stream holds %d messages, %d were acknowledged", info.State.Msgs, acked)
	}
}
