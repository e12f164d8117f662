package natsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrUnreachable: no NATS server answered in time (all of a cluster's
// nodes down, or the network between), so nothing was read or written.
var ErrUnreachable = errors.New("NATS did not answer")

// unreachable words an error of what (a call to the server): one that
// says no server answered says so, and where it was asked.
func (st *Store) unreachable(what string, err error) error {
	if !isUnreachable(err) && st.nc.IsConnected() {
		return fmt.Errorf("natsstore: %s: %w", what, err)
	}
	where := st.nc.ConnectedUrlRedacted()
	if where == "" {
		where = "any of its servers (the connection is down and reconnecting)"
	}
	return fmt.Errorf("natsstore: %s: %w at %s (%v)", what, ErrUnreachable, where, err)
}

func isUnreachable(err error) bool {
	for _, e := range []error{context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders,
		jetstream.ErrNoStreamResponse, nats.ErrConnectionClosed, nats.ErrDisconnected, nats.ErrConnectionReconnecting} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
