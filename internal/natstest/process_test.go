package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestProcessKilledKeepsAcknowledged: a server in a child process killed
// with SIGKILL and started again on its files has every message whose
// publish was acknowledged.
func TestProcessKilledKeepsAcknowledged(t *testing.T) {
	p := Process(t, Options{})
	js, err := jetstream.New(Connect(t, p.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := js.Publish(ctx, "t.x", []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	p.Kill()
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if _, err := js.Stream(short, "T"); err == nil {
		t.Fatal("a killed server answered")
	}
	p.Start()
	for {
		st, err := js.Stream(ctx, "T")
		if err == nil {
			if n := st.CachedInfo().State.Msgs; n != 20 {
				t.Fatalf("after SIGKILL: %d messages, want the 20 acknowledged", n)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the server did not come back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
