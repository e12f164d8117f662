package natsstore

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// sharedKey is the sessions bucket's key of a value the fleet shares; no
// session's key ("meta.", "sum.", "gen.") starts so.
func sharedKey(name string) string { return "fleet." + name }

// Shared is the fleet's value called name: the one already kept, or
// fresh() kept now if there is none (the first server to ask makes it;
// a server racing it gets the winner's). airlock serve --http keeps the
// fleet's server token so that a load balancer may send a new client
// to any server: whoever may read the bucket may read every session's
// files anyway.
func (st *Store) Shared(name string, fresh func() (string, error)) (string, error) {
	if !namePattern.MatchString(name) {
		return "", fmt.Errorf("natsstore: shared value %q: use only letters, digits, - and _", name)
	}
	ctx, cancel := ctxOp()
	defer cancel()
	for range 3 {
		e, err := st.sessions.Get(ctx, sharedKey(name))
		if err == nil {
			return string(e.Value()), nil
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return "", fmt.Errorf("natsstore: reading the fleet's %s: %w", name, err)
		}
		v, err := fresh()
		if err != nil {
			return "", err
		}
		_, err = st.sessions.Create(ctx, sharedKey(name), []byte(v))
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return "", fmt.Errorf("natsstore: keeping the fleet's %s: %w", name, err)
		}
		// Another server made it first: read it.
	}
	return "", fmt.Errorf("natsstore: the fleet's %s changes as it is read: is something deleting it?", name)
}
