package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/broker/natsqueue"
)

// queueOptions are the fleet's review queue's options from its flags.
func (f *fleetFlags) queueOptions(warn io.Writer) natsqueue.Options {
	return natsqueue.Options{Prefix: f.nats.Prefix, Replicas: f.nats.Replicas, Warn: warn}
}

// publishReviews offers gate's requests to the fleet's review queue as
// well as to this machine's socket (serve --store): a reviewer anywhere
// in the fleet, and a local one, both see them; the first decision
// wins at the gate. It returns what stops it; without --store it does
// nothing.
func (sv *served) publishReviews(gate *approval.Gate) (stop func(), err error) {
	if sv.nc == nil {
		return func() {}, nil
	}
	p, err := natsqueue.Publish(gate, sv.nc, sv.f.fleet.queueOptions(sv.stderr),
		broker.ServerInfo{PID: os.Getpid(), Worker: sv.w.Name, Started: time.Now()})
	if err != nil {
		return nil, err
	}
	// Where, not the URL: the URL may carry a password.
	fmt.Fprintf(sv.stderr, "airlock serve: requests also go to the fleet's review queue at %s, as server %s; review them on any machine with airlock review --store\n",
		sv.f.fleet.nats.Where(), p.Info().Name)
	return func() { _ = p.Close() }, nil // what is pending stays queued for a restart
}

// watchFleet is airlock review --store: every request of the fleet's
// queue, whichever server offers it.
func watchFleet(ctx context.Context, nc *nats.Conn, f *fleetFlags, stderr io.Writer) (*broker.Reviewer, error) {
	return natsqueue.Watch(ctx, nc, f.queueOptions(stderr))
}
