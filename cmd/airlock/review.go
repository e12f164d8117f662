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

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/review"
)

func runReview(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("airlock review", "airlock review [--once]",
		"Shows pushes waiting for approval from every running `airlock serve` (every session and\n"+
			"repository of each), as they arrive, and sends your decision back. One waiting push is\n"+
			"shown at once; several are listed, grouped by server, session and repository, and you\n"+
			"choose which to review, in any order. It needs a terminal.\n\n"+review.KeysHelp, stderr)
	once := fs.Bool("once", false, "decide one push, then exit")
	if err := parse(fs, args); err != nil {
		return err
	}
	tty, err := review.OpenTTY()
	if err != nil {
		return &exitError{exitNoTerminal, fmt.Errorf("%w: airlock review shows the exact diff of every push and asks you to decide, so it runs only in a terminal", review.ErrNoTerminal)}
	}
	defer tty.Close()
	dir, err := broker.SocketDir()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := broker.Watch(ctx, dir)
	if err != nil {
		return err
	}
	defer r.Close()
	ledgerFile := "(unknown)"
	if state, err := broker.StateDir(); err == nil {
		ledgerFile = filepath.Join(state, "ledger.jsonl")
	}
	fmt.Fprintf(tty, "airlock review: waiting for pushes from servers in %s (ledger: %s; Ctrl-C to stop)\n", dir, ledgerFile)
	err = review.Review(ctx, r, tty, *once)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
