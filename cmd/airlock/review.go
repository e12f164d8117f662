package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/nats-io/nkeys"

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/internal/reviewkey"
)

func runReview(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("airlock review", "airlock review [--once] [--key FILE] [--print-key] [--store nats://HOST:PORT]",
		"Shows pushes waiting for approval from every running `airlock serve` (every session and\n"+
			"repository of each), as they arrive, and sends your decision back. One waiting push is\n"+
			"shown at once; several are listed, grouped by server, session and repository, and you\n"+
			"choose which to review, in any order. It needs a terminal. With --store, it shows the\n"+
			"requests of every server of the fleet (each `airlock serve --store` on any machine),\n"+
			"from the fleet's review queue in NATS, instead of this machine's.\n\n"+review.KeysHelp, stderr)
	once := fs.Bool("once", false, "decide one push, then exit")
	keyFile := fs.String("key", "", "the reviewer's key (an nkeys seed file, mode 0600) to sign decisions with; default: the state\n"+
		"directory's "+reviewkey.FileName+", made on first use")
	printKey := fs.Bool("print-key", false, "print the reviewer's public key (for airlock serve --reviewer-key) and exit")
	var fleet fleetFlags
	fleet.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := fleet.check(); err != nil {
		return err
	}
	key, err := reviewerKey(*keyFile, stderr)
	if err != nil {
		return err
	}
	if *printKey {
		fmt.Fprintln(stdout, reviewkey.Public(key))
		return nil
	}
	tty, err := review.OpenTTY()
	if err != nil {
		return &exitError{exitNoTerminal, fmt.Errorf("%w: airlock review shows the exact diff of every push and asks you to decide, so it runs only in a terminal", review.ErrNoTerminal)}
	}
	defer tty.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, done, err := watchReviews(ctx, &fleet, tty, stderr)
	if err != nil {
		return err
	}
	defer done()
	r.SetKey(key)
	fmt.Fprintf(tty, "airlock review: signing decisions with the reviewer key %s (servers apply them when they trust it: airlock serve --reviewer-key)\n", reviewkey.Public(key))
	err = review.Review(ctx, r, tty, *once)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// watchReviews watches this machine's servers (their sockets), or with
// --store the fleet's queue, and says which on tty; done lets go.
func watchReviews(ctx context.Context, fleet *fleetFlags, tty, stderr io.Writer) (r *broker.Reviewer, done func(), err error) {
	nc, err := fleet.connect("airlock review", stderr)
	if err != nil {
		return nil, nil, err
	}
	if nc != nil {
		// A warning, not a refusal: the reviewer's decisions are signed
		// over what it was shown, so such a NATS cannot turn them into
		// others; it can hide requests, or show ones no server has (whose
		// decisions no server applies).
		switch {
		case !fleet.nats.HasCredentials():
			fmt.Fprintf(stderr, "airlock review: warning: NATS at %s let this reviewer in without credentials: anyone who reaches it reads every push and can write the review queue (docs/fleet.md gives reviewers a NATS user of their own)\n", fleet.nats.Where())
		case fleet.nats.OpenToAnyone():
			// A NATS without authorization takes any credentials.
			fmt.Fprintf(stderr, "airlock review: warning: NATS at %s lets in a client without credentials (this reviewer's own are not asked for): anyone who reaches it reads every push and can write the review queue (docs/fleet.md gives reviewers a NATS user of their own)\n", fleet.nats.Where())
		}
		r, err := watchFleet(ctx, nc, fleet, stderr)
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		fmt.Fprintf(tty, "airlock review: waiting for pushes from the fleet's servers, through its review queue at %s (each server records decisions in its ledger; Ctrl-C to stop)\n", fleet.nats.Where())
		return r, func() { r.Close(); nc.Close() }, nil
	}
	dir, err := broker.SocketDir()
	if err != nil {
		return nil, nil, err
	}
	if r, err = broker.Watch(ctx, dir); err != nil {
		return nil, nil, err
	}
	ledgerFile := "(unknown)"
	if state, err := broker.StateDir(); err == nil {
		ledgerFile = filepath.Join(state, "ledger.jsonl")
	}
	fmt.Fprintf(tty, "airlock review: waiting for pushes from servers in %s (ledger: %s; Ctrl-C to stop)\n", dir, ledgerFile)
	return r, r.Close, nil
}

// reviewerKey is the key this reviewer signs with: file's (--key), or the
// state directory's, made on first use.
func reviewerKey(file string, stderr io.Writer) (nkeys.KeyPair, error) {
	if file != "" {
		return reviewkey.Load(file)
	}
	state, err := broker.StateDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(state, reviewkey.FileName)
	kp, created, err := reviewkey.LoadOrCreate(path)
	if err != nil {
		return nil, fmt.Errorf("the reviewer's key: %w; or give one with --key FILE", err)
	}
	if created {
		fmt.Fprintf(stderr, "airlock review: made a new reviewer key in %s: servers of this machine trust it; a fleet's servers need its public key, %s (airlock serve --reviewer-key)\n", path, reviewkey.Public(kp))
	}
	return kp, nil
}
