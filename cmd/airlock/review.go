package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/airlock-dev/airlock/approval"
)

func review(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("airlock review", "airlock review [--once]",
		"Shows pushes waiting for approval from every running `airlock serve`, as they arrive,\n"+
			"one prompt at a time, and sends your decision back. It needs a terminal.", stderr)
	once := fs.Bool("once", false, "decide one push, then exit")
	if err := parse(fs, args); err != nil {
		return err
	}
	tty, err := approval.OpenTTY()
	if err != nil {
		return &exitError{exitNoTerminal, fmt.Errorf("%w: airlock review shows the exact diff of every push and asks you to decide, so it runs only in a terminal", approval.ErrNoTerminal)}
	}
	defer tty.Close()
	dir, err := approval.SocketDir()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := approval.Watch(ctx, dir)
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Fprintf(tty, "airlock review: waiting for pushes (Ctrl-C to stop)\n")
	err = approval.Review(ctx, r, tty, *once)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
