package runs

import (
	"net/netip"
	"time"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session/runcache"
)

// Mode is what a run may do, chosen by the operator on airlock serve,
// never by a worker file.
type Mode string

const (
	// WorkspaceWrite: runs write into the workspace (the default).
	WorkspaceWrite Mode = "workspace-write"
	// ReadOnly: runs see the workspace; what they write is discarded.
	ReadOnly Mode = "read-only"
	// Danger: as workspace-write, every run with the network (the
	// internet, not the host: see sandbox.Spec.Network).
	Danger Mode = "danger"
)

// Options are the operator's settings for the run tool. A session
// without them has no run tool.
type Options struct {
	Mode Mode
	// ReadOnly lists host paths bound read-only into every run (a Go
	// module cache, a package cache).
	ReadOnly []string
	// Env is added to the environment every run gets (KEY=VALUE).
	Env []string
	// MaxTimeout caps a run's timeout; 0 means 10 minutes, also the
	// default timeout.
	MaxTimeout time.Duration
	Limits     sandbox.Limits
	// AllowHosts are the host:port pairs a run with the network reaches
	// besides the internet (serve's --run-allow-host), and nothing else of
	// the host or its network.
	AllowHosts []netip.AddrPort
	// MirrorDir is where the session's mirror of the workspace lives: a
	// tmpfs (default /dev/shm, else the system's temporary directory).
	MirrorDir string
	// Cache is the worker's cache, which runs see at ~/.cache (see
	// cache.go); nil: a cache of the session's own, gone with it.
	Cache *runcache.Cache
}

// DefaultTimeout is a run's timeout unless the worker or the operator
// says less.
const DefaultTimeout = 10 * time.Minute

// Bounds on what a run answers and keeps.
const (
	runShown = 16 << 10 // of each stream, in the answer
	runKept  = 8 << 20  // of each stream, for Output
	runsKept = 8        // runs whose output stays readable
)

// Args is one command to run.
type Args struct {
	Command string   // a shell line, run with /bin/sh -c
	Argv    []string // or a program and its arguments
	Cwd     string   // a workspace directory; "" is the root
	Timeout time.Duration
	Stdin   string
	// Network asks for the network for this run, with Reason saying why:
	// a request in the reviewer's queue, unless an earlier approval's
	// scope covers it or the operator allowed the network (--danger).
	Network bool
	Reason  string
}

// Result is how a run went.
type Result struct {
	ID       string // names the run's output for Output
	Exit     int
	Duration time.Duration
	TimedOut bool
	// Killed says why airlock ended the run early, when it did (the
	// workspace quota, its memory budget).
	Killed string
	// CacheDropped says why nothing the run wrote to ~/.cache was kept
	// (it wrote more than the cache has room for), when so.
	CacheDropped   string
	Stdout, Stderr string // as shown: cut to runShown, saying how much was cut
	Checkpoint     string // taken before the run: rollback to it undoes the run
	Created        []string
	Modified       []string
	Deleted        []string
	Refused        []memfs.Refused
	// Unread lists the files the run could not see: their content could
	// not be read (a lazy file its repository no longer has), with why.
	Unread []memfs.Refused
	// Network says the run had the network, and NetworkBy why: "operator"
	// (--danger) or the reviewer's scope ("once", "command", "session").
	Network   bool
	NetworkBy string
	// Discarded: the mode is read-only, so what the run wrote was thrown away.
	Discarded int
	// Ignored counts the paths the run wrote (or removed) that git's
	// ignore rules exclude: they are in the workspace but, as in git
	// status, not in Created, Modified or Deleted.
	Ignored int
	// Sync and Setup are the time spent bringing the mirror up to date and
	// reading the run's changes back.
	Sync, Apply time.Duration
}

// Progress is told how a run goes (seconds done of total, and what).
type Progress func(done, total float64, message string)
