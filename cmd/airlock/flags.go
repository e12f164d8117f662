package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/airlock-dev/airlock/approval"
)

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// newFlags makes a flag set that prints its help to stderr.
func newFlags(name, synopsis, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\n%s\n", synopsis, about)
		if hasFlags(fs) {
			fmt.Fprintln(stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse parses args, turning --help into errHelp and mistakes into usage
// errors. No command takes arguments besides its flags: a stray one (say
// a ledger file given without --file) is a mistake to report, not to
// ignore.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return &exitError{exitUsage, err}
	}
	if fs.NArg() > 0 {
		return usageError("%s takes no arguments besides its flags, got %q; see %s --help", fs.Name(), fs.Args(), fs.Name())
	}
	return nil
}

// protectFlag is serve's --protect: branches (or patterns) a push to
// needs a typed yes, each checked as it is given.
type protectFlag []string

func (p *protectFlag) String() string { return strings.Join(*p, ",") }

func (p *protectFlag) Set(v string) error {
	if err := approval.CheckProtect(v); err != nil {
		return err
	}
	*p = append(*p, v)
	return nil
}
