package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/natsstore"
)

const sessionsUsage = `Usage: airlock sessions list
       airlock sessions show ID
       airlock sessions export ID DIR [--bundle FILE]
       airlock sessions rm ID
       airlock sessions prune [--older-than D] [--force] [--dry-run]

A session's work (files, staged commits, checkpoints, pushes waiting) is saved in
airlock's state directory as it happens, so that it survives a crash; airlock serve
resumes a worker's latest unfinished session. These commands let a person see and
rescue a session without an agent:

  list    every session: worker, when, what it holds, whether a server has it open
  show    one session: changed files, staged commits, checkpoints, pending pushes
  export  write the session's files into DIR (new or empty), and with --bundle its
          staged commits as a git bundle (git fetch FILE airlock/ID in the repository)
  rm      delete a session that no server has open
  prune   delete the sessions not changed for a while (--older-than, default 24h)
          whose work all left; --force also those with work that has not left.
          A session a running server has open is never deleted.

Each takes --store nats://HOST:PORT (and the NATS credentials' flags, as airlock serve)
to see the sessions a fleet keeps in NATS JetStream instead of this machine's.
`

// sessionsIn is where sessions live: the fleet's JetStream with --store,
// else airlock's state directory; where says which, for people. A
// connection to NATS closes when the process ends.
func sessionsIn(fl *fleetFlags, stderr io.Writer) (st store.Store, where string, err error) {
	if err := fl.check(); err != nil {
		return nil, "", err
	}
	nc, err := fl.connect("airlock sessions", stderr)
	if err != nil {
		return nil, "", err
	}
	if nc != nil {
		// The lease TTL and replicas the fleet's servers gave are kept.
		st, err := natsstore.New(nc, natsstore.Options{Prefix: fl.nats.Prefix})
		return st, fl.nats.Where(), err
	}
	state, err := broker.StateDir()
	if err != nil {
		return nil, "", err
	}
	root := filepath.Join(state, "sessions")
	return session.Local(root), root, nil
}

// parseArgs parses fs from args and returns exactly n positional
// arguments, named in what for the error; flags may come before or after
// them.
func parseArgs(fs *flag.FlagSet, args []string, what ...string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, &exitError{exitUsage, err}
	}
	rest := fs.Args()
	var pos []string
	for len(pos) < len(what) && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		pos, rest = append(pos, rest[0]), rest[1:]
	}
	if len(pos) < len(what) {
		return nil, usageError("%s needs %s; see %s --help", fs.Name(), strings.Join(what[len(pos):], " and "), fs.Name())
	}
	if err := parse(fs, rest); err != nil {
		return nil, err
	}
	return pos, nil
}

func runSessions(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, sessionsUsage)
		if len(args) == 0 {
			return &exitError{exitUsage, fmt.Errorf("sessions needs list, show, export, rm or prune")}
		}
		return errHelp
	}
	var fl fleetFlags
	switch args[0] {
	case "list":
		fs := newFlags("airlock sessions list", "airlock sessions list", "Lists the saved sessions, newest first.", stderr)
		fl.register(fs)
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		st, where, err := sessionsIn(&fl, stderr)
		if err != nil {
			return err
		}
		return listSessions(st, where, stdout)
	case "show":
		fs := newFlags("airlock sessions show", "airlock sessions show ID", "Shows what a session holds.", stderr)
		fl.register(fs)
		pos, err := parseArgs(fs, args[1:], "a session id")
		if err != nil {
			return err
		}
		st, _, err := sessionsIn(&fl, stderr)
		if err != nil {
			return err
		}
		return showSession(st, pos[0], storeFlags(&fl), stdout)
	case "export":
		fs := newFlags("airlock sessions export", "airlock sessions export ID DIR [--bundle FILE]",
			"Writes the session's files (as its last answered call left them) into DIR, which must be\n"+
				"new or empty; with --bundle, also its staged commits as a git bundle.", stderr)
		fl.register(fs)
		bundle := fs.String("bundle", "", "also write the staged commits to this git bundle file")
		pos, err := parseArgs(fs, args[1:], "a session id", "a directory")
		if err != nil {
			return err
		}
		st, _, err := sessionsIn(&fl, stderr)
		if err != nil {
			return err
		}
		return exportSession(st, pos[0], pos[1], *bundle, stdout)
	case "rm":
		fs := newFlags("airlock sessions rm", "airlock sessions rm ID", "Deletes a session that no server has open.", stderr)
		fl.register(fs)
		pos, err := parseArgs(fs, args[1:], "a session id")
		if err != nil {
			return err
		}
		st, _, err := sessionsIn(&fl, stderr)
		if err != nil {
			return err
		}
		if err := st.Remove(pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed session %s\n", pos[0])
		return nil
	case "prune":
		fs := newFlags("airlock sessions prune", "airlock sessions prune [--older-than D] [--force] [--dry-run]",
			"Deletes the saved sessions that were last changed at least --older-than ago and hold no work\n"+
				"that has not left (files changed and not staged, staged commits, pushes waiting for a reviewer);\n"+
				"with --force, those with such work too. A session a running server has open is never deleted.\n"+
				"It lists what it deleted, and what it kept and why.", stderr)
		fl.register(fs)
		older := fs.String("older-than", "24h", "only sessions unchanged for at least this long: a duration such as 90m, 24h or 7d; 0 for all")
		force := fs.Bool("force", false, "also delete sessions with work that has not left (export it first: airlock sessions export)")
		dry := fs.Bool("dry-run", false, "delete nothing; list what would be deleted")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		age, err := parseAge(*older)
		if err != nil {
			return usageError("--older-than %s: %v", *older, err)
		}
		st, _, err := sessionsIn(&fl, stderr)
		if err != nil {
			return err
		}
		return pruneSessions(st, session.PruneOptions{OlderThan: age, Force: *force, DryRun: *dry}, stdout)
	}
	return usageError("unknown sessions command %q: use list, show, export, rm or prune", args[0])
}

func state(l session.Listed) string {
	switch {
	case l.Running:
		return "running"
	case l.NoState:
		return "empty"
	case l.Closed:
		return "stopped"
	}
	return "crashed"
}

// via is how a session's worker reaches it: its own stdio server, or an
// HTTP server, where only its token resumes it.
func via(m session.Meta) string {
	if m.Transport == "" {
		return "stdio"
	}
	return termsafe.Text(m.Transport)
}

func listSessions(st store.Store, where string, stdout io.Writer) error {
	list, err := session.ListSessions(st)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "no sessions in %s\n", where)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKER\tVIA\tSTATE\tUPDATED\tCHANGED\tSTAGED\tCHECKPOINTS\tPENDING\tSIZE")
	for _, l := range list {
		when := l.Updated
		if when.IsZero() {
			when = l.Created
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", l.ID, termsafe.Text(l.Worker), via(l.Meta), state(l),
			when.Local().Format(time.DateTime), l.Changed, l.Staged, l.Checkpoints, l.Pending, bytesize.Format(l.Bytes))
	}
	return tw.Flush()
}

// storeFlags are the flags that reach the sessions' store again: none
// for this machine's files.
func storeFlags(fl *fleetFlags) string {
	if !fl.nats.Enabled() {
		return ""
	}
	return fl.nats.Flags()
}

// showSession prints session id of st for a person; flags are those
// that reach st, which a command to resume it needs too.
func showSession(st store.Store, id, flags string, stdout io.Writer) error {
	in, err := session.Inspect(st, id)
	if err != nil {
		return err
	}
	p := func(format string, args ...any) { fmt.Fprintf(stdout, format, args...) }
	p("session   %s (%s)\n", in.ID, state(in.Listed))
	p("worker    %s", termsafe.Text(in.Worker))
	if in.WorkerFile != "" {
		p(" (%s)", termsafe.Text(in.WorkerFile))
	}
	p("\nvia       %s", via(in.Meta))
	if in.Transport == "http" {
		p(" (a client resumes it with its own token at /mcp/%s)", in.ID)
	}
	p("\ncreated   %s\nupdated   %s\nstate in  %s (%s)\n", in.Created.Local().Format(time.DateTime), lastChanged(in.Listed).Local().Format(time.DateTime), in.Where, bytesize.Format(in.Bytes))
	if !in.Base.IsZero() {
		p("base      %s\n", in.Base)
	}
	p("\nchanged, not staged (%d):\n", len(in.Changes))
	for _, c := range in.Changes {
		p("  %-8s %s\n", changeWord[c.Kind], termsafe.Text(c.Path))
	}
	p("\nstaged commits (%d):\n", len(in.Staged))
	for _, c := range in.Staged {
		p("  %s %s (%d files)\n", shortid.Hex(c.ID.String()), termsafe.Text(strings.SplitN(c.Message, "\n", 2)[0]), len(c.Files))
	}
	p("\ncheckpoints (%d):\n", len(in.Checkpoints))
	for _, c := range in.Checkpoints {
		p("  %s  %s\n", c.Time.Local().Format(time.DateTime), termsafe.Text(c.Name))
	}
	if len(in.Pushes) > 0 {
		p("\npushes in flight (%d):\n", len(in.Pushes))
		for _, x := range in.Pushes {
			p("  %s  %s to %s %s (%s)\n", x.Request, shortid.Hex(x.Commit), termsafe.Text(x.Target), x.Ref, x.State)
		}
	}
	resume := in.Meta.ServeCommand()
	export := "airlock sessions export " + in.ID + " DIR [--bundle FILE]"
	if flags != "" {
		resume = strings.TrimSuffix(resume, "`") + " " + flags + "`"
		export += " " + flags
	}
	p("\nRescue it with `%s`, or resume it with %s (the same worker and flags).\n", termsafe.Text(export), termsafe.Text(resume))
	return nil
}

func exportSession(st store.Store, id, dir, bundle string, stdout io.Writer) (err error) {
	in, err := session.Inspect(st, id)
	if err != nil {
		return err
	}
	n, unread, err := in.ExportFiles(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d files of session %s to %s\n", n, in.ID, dir)
	if len(unread) > 0 {
		// The rest is written; these are named, and the export fails.
		for _, u := range unread {
			fmt.Fprintf(stdout, "  not written: %s: %s\n", termsafe.Line(u.Path), termsafe.Line(u.Err.Error()))
		}
		defer func() {
			if err == nil {
				err = fmt.Errorf("%d files of the base could not be read, and were not written (listed above)", len(unread))
			}
		}()
	}
	if bundle == "" {
		return nil
	}
	f, err := os.OpenFile(bundle, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	ref := "refs/heads/airlock/" + in.ID
	if err := in.WriteBundle(f, ref); err != nil {
		f.Close()
		os.Remove(bundle)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d staged commits to %s; in the repository: git fetch %s %s:%s\n",
		len(in.Staged), bundle, bundle, ref, "airlock/"+in.ID)
	return nil
}

// parseAge reads a duration as time.ParseDuration does, and days ("7d").
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("give a number of days such as 7d, or a duration such as 24h")
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	age, err := time.ParseDuration(s)
	if err != nil || age < 0 {
		return 0, fmt.Errorf("give a duration such as 90m, 24h or 7d")
	}
	return age, nil
}

// pruneSessions deletes what o names and says what it deleted and kept.
func pruneSessions(st store.Store, o session.PruneOptions, stdout io.Writer) error {
	res, err := session.Prune(st, o)
	if err != nil {
		return err
	}
	verb := "removed"
	if o.DryRun {
		verb = "would remove"
	}
	var bytes int64
	for _, l := range res.Removed {
		bytes += l.Bytes
		fmt.Fprintf(stdout, "%s %s  %s  %s, last changed %s%s\n", verb, l.ID, termsafe.Text(l.Worker), state(l), lastChanged(l).Local().Format(time.DateTime), holds(l))
	}
	fmt.Fprintf(stdout, "%s %d session(s), %s, unchanged for %s or more\n", verb, len(res.Removed), bytesize.Format(bytes), o.OlderThan)
	if n := len(res.Unfinished); n > 0 {
		var ids []string
		for _, l := range res.Unfinished {
			ids = append(ids, l.ID+holds(l))
		}
		fmt.Fprintf(stdout, "kept %d with work that has not left (export it with airlock sessions export ID DIR, or --force): %s\n", n, strings.Join(ids, ", "))
	}
	if n := len(res.Running); n > 0 {
		var ids []string
		for _, l := range res.Running {
			ids = append(ids, l.ID)
		}
		fmt.Fprintf(stdout, "kept %d open in a running airlock serve: %s\n", n, strings.Join(ids, ", "))
	}
	if res.Recent > 0 {
		fmt.Fprintf(stdout, "kept %d changed less than %s ago\n", res.Recent, o.OlderThan)
	}
	if len(res.Failed) > 0 {
		var msgs []string
		for id, err := range res.Failed {
			msgs = append(msgs, id+": "+err.Error())
		}
		sort.Strings(msgs)
		return fmt.Errorf("could not remove %d session(s): %s", len(msgs), strings.Join(msgs, "; "))
	}
	return nil
}

func lastChanged(l session.Listed) time.Time {
	if l.Updated.IsZero() {
		return l.Created
	}
	return l.Updated
}

// holds says what work a session holds, if any.
func holds(l session.Listed) string {
	if !l.Unfinished() {
		return ""
	}
	return fmt.Sprintf(" (%d changed, %d staged, %d pending)", l.Changed, l.Staged, l.Pending)
}

// changeWord is how sessions show has always named a change (the
// operator's words, as README shows them; change.Kind's own are the wire's).
var changeWord = map[change.Kind]string{change.Create: "created", change.Update: "modified", change.Delete: "deleted"}
