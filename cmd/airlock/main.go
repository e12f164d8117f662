package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/sandbox"
)

const (
	exitOK         = 0
	exitFailure    = 1
	exitUsage      = 2
	exitBroken     = 3
	exitNoTerminal = 4
)

// exitError carries an exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

const usage = `airlock: a sandbox for coding agents in which git is the only way out.

Usage:
  airlock serve   [--worker FILE] [--timeout D] [--never-approve] [--auto-approve TARGET]... [--http ADDR]
                  [--new | --ephemeral | --session ID] [--retention D]
                  [--run MODE] [--run-ro PATH]... [--run-env K=V]... [--run-timeout D] [--run-cache-size SIZE]
                  [--run-allow-host IP:PORT]... [--reviewer-key KEY|FILE]...
                  [--store nats://HOST:PORT [--insecure-nats] [--advertise URL] [--lease-ttl D]] (--store needs --reviewer-key)
  airlock review  [--once] [--key FILE] [--print-key] [--store nats://HOST:PORT]
  airlock ledger  verify | show [-n N]  [--store nats://HOST:PORT]
  airlock sessions list | show ID | export ID DIR [--bundle FILE] | rm ID | prune [--older-than D] [--force]  [--store nats://HOST:PORT]
  airlock cache   list | show [ID] [--worker FILE] | clear [ID] [--worker FILE]
  airlock demo    [--yes]
  airlock version

Run "airlock COMMAND --help" for a command's options.
Exit codes: 0 success, 1 failure, 2 bad usage, 3 broken ledger, 4 no terminal.
`

func main() {
	// First of all: this process may be a command sandbox's helper, which
	// never returns from here.
	sandbox.Main()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stdin, stdout, stderr)
	case "review":
		err = runReview(args[1:], stdout, stderr)
	case "ledger":
		err = runLedger(args[1:], stdout, stderr)
	case "sessions":
		err = runSessions(args[1:], stdout, stderr)
	case "cache":
		err = runCache(args[1:], stdout, stderr)
	case "demo":
		err = demo(args[1:], stdout, stderr)
	case "version", "--version":
		err = versionCommand(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		err = usageError("unknown command %q", args[0])
	}
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	// An error may quote a worker's path or a repository's message.
	msg := termsafe.Text(err.Error())
	if code == exitUsage {
		fmt.Fprintf(stderr, "airlock: %s\n\n%s", msg, usage)
	} else if !errors.Is(err, errHelp) {
		fmt.Fprintf(stderr, "airlock: %s\n", msg)
	}
	if errors.Is(err, errHelp) {
		return exitOK
	}
	return code
}

// errHelp reports that --help was asked for and printed.
var errHelp = errors.New("help shown")

func versionCommand(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("airlock version", "airlock version", "Prints airlock's version.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "airlock", version())
	return nil
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
