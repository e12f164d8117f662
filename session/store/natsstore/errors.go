package natsstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/internal/natsconn"
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
	where := natsconn.ConnectedURL(st.nc)
	if where == "" {
		where = "any of its servers (the connection is down and reconnecting)"
	}
	return fmt.Errorf("natsstore: %s: %w at %s (%v)", what, ErrUnreachable, where, err)
}

func isUnreachable(err error) bool {
	// 503: "JetStream system temporarily unavailable", a cluster
	// between leaders.
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 503 {
		return true
	}
	for _, e := range []error{context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders,
		jetstream.ErrNoStreamResponse, nats.ErrConnectionClosed, nats.ErrDisconnected, nats.ErrConnectionReconnecting} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// reconnectWait is how long a write waits for a connection that is down
// to come back (a cluster's client moves to another node in
// milliseconds) before it fails: sent while the connection is down, it
// would wait in the client's buffer for the whole opTimeout.
const reconnectWait = 2 * time.Second

// connected is nil once the connection is up, ErrUnreachable when it is
// still down after reconnectWait.
func (st *Store) connected(what string) error {
	for deadline := time.Now().Add(reconnectWait); !st.nc.IsConnected(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) || st.nc.IsClosed() {
			return st.unreachable(what, nats.ErrDisconnected)
		}
	}
	return nil
}

// retry calls read again while it fails because no server answered (a
// cluster electing a leader after a node's loss answers "no responders"
// for a moment, and a request in flight to a node that died is never
// answered: each try waits attemptTimeout at most), until ctx ends. Only
// for reads: a write that failed is its caller's to judge.
func retry(ctx context.Context, read func(ctx context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := read(actx)
		cancel()
		if err == nil || !isUnreachable(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
