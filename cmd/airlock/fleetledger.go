package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/approval/ledger/natsledger"
)

// openGateLedger is the ledger serve's gate writes: the fleet's stream in
// NATS when serve has --store (one ledger for every server of the
// fleet), this machine's file otherwise. close lets it go.
func (sv *served) openGateLedger() (l approval.Ledger, close func(), err error) {
	if sv.nc != nil {
		o := sv.f.fleet.nats
		nl, err := natsledger.New(sv.nc, natsledger.Options{Prefix: o.Prefix, Replicas: o.Replicas})
		if err != nil {
			return nil, nil, err
		}
		return nl, func() {}, nil
	}
	fl, err := ledger.Open(filepath.Join(sv.state, "ledger.jsonl"))
	if err != nil {
		return nil, nil, err
	}
	// What the file lost is told at start; a stream's ledger is checked
	// by `airlock ledger verify --store` (its records cannot be removed
	// through the API).
	warnLedger(sv.stderr, fl.Path())
	return fl, func() { _ = fl.Close() }, nil // read only from here on: every record was fsynced
}

// ledgerSource is the ledger `airlock ledger` reads: a file, or the
// fleet's stream (--store).
type ledgerSource interface {
	Path() string
	Records() ([]ledger.Record, error)
	Verify() (ledger.Report, error)
	// startAgain says how to start a new ledger, keeping this one.
	startAgain() string
}

// fileLedger is a ledger file, read as it is.
type fileLedger string

func (f fileLedger) Path() string                      { return string(f) }
func (f fileLedger) Records() ([]ledger.Record, error) { return ledger.Records(string(f)) }
func (f fileLedger) Verify() (ledger.Report, error)    { return ledger.Verify(string(f)) }
func (f fileLedger) startAgain() string                { return "move it and its anchor aside" }

// fleetLedger is a fleet's ledger stream.
type fleetLedger struct{ *natsledger.Ledger }

func (f fleetLedger) startAgain() string {
	return fmt.Sprintf("stop the fleet's servers, back the stream up (nats stream backup %s DIR) and remove it (nats stream rm %s)", f.Stream(), f.Stream())
}

// openLedgerSource is the ledger a command names: --store's stream, or
// the file (--file, or the state directory's). done closes what it
// opened.
func openLedgerSource(name, file string, fleet *fleetFlags, stderr io.Writer) (src ledgerSource, done func(), err error) {
	if err := fleet.check(); err != nil {
		return nil, nil, err
	}
	if !fleet.nats.Enabled() {
		path, err := ledgerPath(file)
		if err != nil {
			return nil, nil, err
		}
		return fileLedger(path), func() {}, nil
	}
	if file != "" {
		return nil, nil, usageError("%s: --file and --store name two ledgers: give one", name)
	}
	nc, err := fleet.connect(name, stderr)
	if err != nil {
		return nil, nil, err
	}
	o := fleet.nats
	l, err := natsledger.Open(nc, natsledger.Options{Prefix: o.Prefix})
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return fleetLedger{l}, nc.Close, nil
}
