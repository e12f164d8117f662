package natsstore

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestMessagesHideTheURLsToken: a token given in the URL (nats://TOKEN@HOST,
// as --store takes it) is in no message: ConnectedUrlRedacted hides
// passwords only.
func TestMessagesHideTheURLsToken(t *testing.T) {
	srv := startServer(t, t.TempDir(), -1)
	nc, err := nats.Connect(strings.Replace(srv.ClientURL(), "nats://", "nats://s3cret-token@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	st, err := New(nc, Options{LeaseTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if w := st.where("x"); strings.Contains(w, "s3cret") || !strings.Contains(w, srv.ClientURL()) {
		t.Fatalf("where: %q", w)
	}
}
