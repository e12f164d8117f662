package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/airlock-dev/airlock/internal/natsconn"
)

// fleetFlags are the flags of a command that may reach a fleet's NATS
// (--store and the credentials beside it).
type fleetFlags struct {
	nats natsconn.Options
}

func (f *fleetFlags) register(fs *flag.FlagSet) { f.nats.Register(fs) }

// check is the flags' usage error, if any.
func (f *fleetFlags) check() error {
	if err := f.nats.Check(); err != nil {
		return &exitError{exitUsage, err}
	}
	return nil
}

// connect connects to the fleet's NATS as name; nil when --store is not
// given (this machine's files keep everything).
func (f *fleetFlags) connect(name string, stderr io.Writer) (*nats.Conn, error) {
	if !f.nats.Enabled() {
		return nil, nil
	}
	host, _ := os.Hostname()
	nc, err := f.nats.Connect(fmt.Sprintf("%s on %s (pid %d)", name, host, os.Getpid()))
	if errors.Is(err, natsconn.ErrBadStore) {
		return nil, &exitError{exitUsage, err}
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "%s: the fleet's state is in NATS JetStream at %s\n", name, f.nats.Where())
	return nc, nil
}
