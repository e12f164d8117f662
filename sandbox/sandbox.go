package sandbox

import (
	"errors"
	"net/netip"
	"sync"
	"time"
)

// Spec is one command to run in a jail.
type Spec struct {
	Argv []string // the program and its arguments; Argv[0] is looked up in PATH
	Dir  string   // the working directory, relative to the workspace root
	Env  []string // the whole environment (nothing is inherited)

	// Lower is the host directory holding the workspace as the run starts
	// (read-only to the run); Upper and Work are the overlay's upper and
	// work directories on the same file system: Upper receives every
	// change the run makes. Root is an empty host directory the jail's
	// root is mounted on.
	Lower, Upper, Work, Root string

	// Cache, when set, is a host directory bound read-write at
	// Home/.cache: build caches that outlive one run (the session keeps
	// one per session, never shared).
	Cache string
	// ReadOnly lists host paths bound read-only at the same path inside.
	ReadOnly []string
	// Network gives the run the internet through a user-mode network
	// stack (slirp4netns) in its own network namespace, never the host:
	// its loopback, its addresses, link-local and the private ranges are
	// shut (netjail_linux.go). Otherwise the run has a loopback interface
	// of its own and nothing else.
	Network bool
	// AllowHosts are the host:port pairs a run with the network reaches
	// besides the internet, each exactly (serve's --run-allow-host): the
	// server forwards them from a listener in the run's namespace.
	AllowHosts []netip.AddrPort
	// HostLocal is what the host delivers to itself, shut to the run
	// (Run fills it in).
	HostLocal []netip.Prefix
	Limits    Limits

	// Scratch bounds /tmp, the home and /dev/shm together: one tmpfs of
	// this size, counted against the session's quota (see Report.Scratch).
	Scratch Bound
	// CacheRoom bounds what the run may add to Cache: the run sees the
	// cache through an overlay whose upper layer is a tmpfs of about this
	// size, merged into Cache after the run only when it fits (see
	// Report). Zero: the default.
	CacheRoom Bound

	// Report, when set, is filled in as the run goes (never sent to the
	// helper).
	Report *Report `json:"-"`
}

// Bound is a size in bytes and in files (inodes: directories count).
type Bound struct {
	Bytes int64
	Files int64
}

func (b Bound) or(d Bound) Bound {
	if b.Bytes <= 0 {
		b.Bytes = d.Bytes
	}
	if b.Files <= 0 {
		b.Files = d.Files
	}
	return b
}

// DefaultScratch is a run's scratch bound unless the spec says otherwise.
var DefaultScratch = Bound{Bytes: 512 << 20, Files: 100_000}

// DefaultCacheRoom is what a run may add to its cache unless the spec
// says otherwise.
var DefaultCacheRoom = Bound{Bytes: 1 << 30, Files: 100_000}

// Report is what a run held outside the workspace.
type Report struct {
	mu      sync.RWMutex
	scratch int // the scratch's descriptor while the run goes, or -1 (0: not yet)
	// CacheAdded is what the run added to the cache, kept; CacheDropped
	// says why what it wrote there was not kept (it outgrew CacheRoom),
	// and is empty otherwise.
	CacheAdded   Bound
	CacheDropped string
	// Killed says why the run was ended for its budget (its processes'
	// memory together), when it was.
	Killed string
}

// Limits bound a run's resources. Zero fields get the defaults.
type Limits struct {
	Memory   int64         // address space of each process, and the run's processes' memory together, bytes; default 8 GiB
	Procs    int           // processes of the run (its own user namespace's count); default 512
	CPU      time.Duration // CPU time of each process; default 10 minutes
	FileSize int64         // largest file a process may write; default 1 GiB
	Files    int           // open files per process; default 1024
}

func (l Limits) withDefaults() Limits {
	if l.Memory <= 0 {
		l.Memory = 8 << 30
	}
	if l.Procs <= 0 {
		l.Procs = 512
	}
	if l.CPU <= 0 {
		l.CPU = 10 * time.Minute
	}
	if l.FileSize <= 0 {
		l.FileSize = 1 << 30
	}
	if l.Files <= 0 {
		l.Files = 1024
	}
	return l
}

// runNetwork is the network of a run's user-mode stack (slirp4netns's
// default): the run's own address, its gateway and its DNS address.
var runNetwork = netip.MustParsePrefix("10.0.2.0/24")

// RunsOwnNetwork says whether a is in a networked run's own network,
// which no allowed pair may name: inside the run it means the stack.
func RunsOwnNetwork(a netip.Addr) bool { return runNetwork.Contains(a.Unmap()) }

// Workspace is where the workspace is inside the jail, and the working
// directory's root.
const Workspace = "/workspace"

// Home is the run's home directory: empty, private, in memory.
const Home = "/home/sandbox"

// ErrUnavailable: the jail cannot be built on this machine. Run never
// runs a command without it.
var ErrUnavailable = errors.New("the sandbox for commands cannot be built here")

// ErrSetup: the jail failed to come up; the command did not start.
var ErrSetup = errors.New("the sandbox failed to start the command")

// ErrUnreachable: a path the operator gave is one the jail's user could
// not read.
var ErrUnreachable = errors.New("the commands' user cannot read it")
