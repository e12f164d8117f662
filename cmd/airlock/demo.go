package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/gittools"
)

func demo(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("airlock demo", "airlock demo [--yes]",
		"Shows airlock end to end, with nothing to set up: a temporary repository, a scripted worker\n"+
			"using the real tools, and a push that you approve (or reject) at the prompt a reviewer sees.", stderr)
	yes := fs.Bool("yes", false, "approve the push without asking (for a run without a terminal)")
	if err := parse(fs, args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o := gittools.DemoOptions{Out: stdout, Yes: *yes}
	if !*yes {
		tty, err := review.OpenTTY()
		if err != nil {
			return &exitError{exitNoTerminal, fmt.Errorf("airlock demo asks you to approve a push, so it needs a terminal; " +
				"run it in one, or run `airlock demo --yes` to approve automatically")}
		}
		defer tty.Close()
		o.Terminal = tty
	}
	return gittools.RunDemo(ctx, o)
}
