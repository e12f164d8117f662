package natsstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/session/store"
)

// TestHostileIDsNeverReachNATS: ids come from clients' requests. One too
// long for a subject (the NATS server drops a connection whose control
// line passes 4 KiB) or with characters no id has is refused as no
// session, and the connection stays up.
func TestHostileIDsNeverReachNATS(t *testing.T) {
	st := storeMaker(t, time.Hour)(t).(*Store)
	for _, id := range []string{strings.Repeat("a", 8000), "a*b", "a>b", "a.b", "", "a b"} {
		if _, err := st.ReadMeta(id); !errors.Is(err, store.ErrNoSession) {
			t.Errorf("ReadMeta(%.20q): %v, want ErrNoSession", id, err)
		}
		if _, _, _, err := st.Holder(id); !errors.Is(err, store.ErrNoSession) {
			t.Errorf("Holder(%.20q): %v, want ErrNoSession", id, err)
		}
		if err := st.Break(id, 1); !errors.Is(err, store.ErrNoSession) {
			t.Errorf("Break(%.20q): %v, want ErrNoSession", id, err)
		}
		if _, err := st.Open(id); !errors.Is(err, store.ErrNoSession) {
			t.Errorf("Open(%.20q): %v, want ErrNoSession", id, err)
		}
	}
	if !st.nc.IsConnected() || st.nc.Stats().Reconnects != 0 {
		t.Fatal("a hostile id dropped the store's NATS connection")
	}
}
