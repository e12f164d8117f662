package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/session/runcache"
	workerfile "github.com/airlock-dev/airlock/worker"
)

const cacheUsage = `Usage: airlock cache list
       airlock cache show [ID] [--worker FILE]
       airlock cache clear [ID] [--worker FILE]

A worker's commands (run) keep their toolchains' caches (Go's build and module
caches, pip, npm, cargo, ccache: everything under ~/.cache in a run) in airlock's
state directory, one cache per worker, so that builds stay warm across runs,
sessions and restarts of airlock serve. No worker sees another's, and none of it
is in the workspace. airlock serve --run-cache-size bounds each (default 10GiB);
over it, the least recently used tool's cache goes first, never under a run.

  list   every worker's cache: its id, worker, size, last use, and whether a run
         holds it now
  show   one cache: where it is, and what each tool holds
  clear  empty one cache (refused while a run holds it; the next run starts cold)

show and clear take a cache id from list, or --worker FILE for that worker's
cache; with neither, the default worker of the repository in the current
directory (the one airlock serve runs without --worker).
`

// cachesRoot is where workers' caches live: airlock's state directory.
func cachesRoot() (string, error) {
	state, err := broker.StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(state, "cache"), nil
}

// workerCacheMeta names the cache of a worker: its file's, or the default
// worker's of the current directory.
func workerCacheMeta(workerFile string) (runcache.Meta, error) {
	var w *workerfile.Worker
	if workerFile != "" {
		if _, err := os.Stat(workerFile); err != nil {
			return runcache.Meta{}, fmt.Errorf("--worker %s: %w", workerFile, err)
		}
		w = &workerfile.Worker{}
	} else {
		cwd, err := os.Getwd()
		if err != nil {
			return runcache.Meta{}, err
		}
		w = workerfile.Default(cwd)
	}
	key, file := workerKey(w, workerFile)
	return runcache.Meta{ID: runcache.ID(key), Worker: w.Name, WorkerKey: key, WorkerFile: file}, nil
}

// optionalID parses fs from args and returns a cache id given before or
// after the flags, or "".
func optionalID(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", errHelp
		}
		return "", &exitError{exitUsage, err}
	}
	rest, id := fs.Args(), ""
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		id, rest = rest[0], rest[1:]
	}
	return id, parse(fs, rest)
}

func runCache(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, cacheUsage)
		if len(args) == 0 {
			return &exitError{exitUsage, fmt.Errorf("cache needs list, show or clear")}
		}
		return errHelp
	}
	root, err := cachesRoot()
	if err != nil {
		return err
	}
	switch args[0] {
	case "list":
		fs := newFlags("airlock cache list", "airlock cache list", "Lists every worker's cache, most recently used first.", stderr)
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		return listCaches(root, stdout)
	case "show", "clear":
		about := map[string]string{
			"show":  "Shows one worker's cache: where it is, and what each tool holds.",
			"clear": "Empties one worker's cache; refused while a run holds it.",
		}[args[0]]
		fs := newFlags("airlock cache "+args[0], "airlock cache "+args[0]+" [ID] [--worker FILE]", about, stderr)
		workerFile := fs.String("worker", "", "the worker file whose cache it is; default: the default worker of the current directory's repository")
		id, err := optionalID(fs, args[1:])
		if err != nil {
			return err
		}
		if id != "" && *workerFile != "" {
			return usageError("give a cache id or --worker, not both")
		}
		who := "cache " + id
		if id == "" {
			m, err := workerCacheMeta(*workerFile)
			if err != nil {
				return err
			}
			id, who = m.ID, fmt.Sprintf("worker %s", m.WorkerKey)
			if _, err := runcache.Lookup(root, id); errors.Is(err, runcache.ErrNoCache) {
				return fmt.Errorf("%s has no cache yet (its first run makes one); airlock cache list shows those there are", termsafe.Text(who))
			}
		}
		if args[0] == "show" {
			return showCache(root, id, stdout)
		}
		freed, err := runcache.Clear(root, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "cleared the cache of %s: freed %s\n", termsafe.Text(who), bytesize.Format(freed))
		return nil
	}
	return usageError("unknown cache command %q: use list, show or clear", args[0])
}

func cacheState(l runcache.Listed) string {
	if l.InUse {
		return "in use"
	}
	return "idle"
}

// cacheFor is what a cache is for: the worker file, or the default
// worker's repository.
func cacheFor(m runcache.Meta) string {
	if m.WorkerFile != "" {
		return termsafe.Text(m.WorkerFile)
	}
	return termsafe.Text(m.WorkerKey)
}

func files(u runcache.Usage) int {
	n := 0
	for _, e := range u.Entries {
		n += e.Files
	}
	return n
}

func when(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Local().Format(time.DateTime)
}

func listCaches(root string, stdout io.Writer) error {
	list, err := runcache.List(root)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "no caches in %s\n", root)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKER\tSIZE\tFILES\tUSED\tSTATE\tFOR")
	for _, l := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", l.ID, termsafe.Text(l.Worker), bytesize.Format(l.Usage.Bytes), files(l.Usage),
			when(l.Used), cacheState(l), cacheFor(l.Meta))
	}
	return tw.Flush()
}

func showCache(root, id string, stdout io.Writer) error {
	l, err := runcache.Lookup(root, id)
	if err != nil {
		return err
	}
	p := func(format string, args ...any) { fmt.Fprintf(stdout, format, args...) }
	p("cache     %s (%s)\n", l.ID, cacheState(l))
	p("worker    %s (%s)\n", termsafe.Text(l.Worker), cacheFor(l.Meta))
	p("where     %s (runs see it at ~/.cache)\n", filepath.Join(l.Path, "home"))
	p("size      %s in %d files\n", bytesize.Format(l.Usage.Bytes), files(l.Usage))
	p("used      %s\n", when(l.Used))
	p("\nby tool, largest first (%d):\n", len(l.Usage.Entries))
	for _, e := range l.Usage.Entries {
		// Entry names are what the worker's commands made.
		p("  %-20s %10s %8d files  used %s\n", termsafe.Text(e.Name), bytesize.Format(e.Bytes), e.Files, when(e.Used))
	}
	p("\nEmpty it with `airlock cache clear %s`.\n", l.ID)
	return nil
}
