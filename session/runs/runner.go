package runs

import (
	"io/fs"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox/mirror"
)

// Workspace is what a Runner reads and changes of the session's
// workspace (memfs.Workspace): a run's changes come in through the
// worker's view, as a tool's writes do.
type Workspace interface {
	mirror.Workspace
	Stat(name string) (fs.FileInfo, error)
	Limits() memfs.Limits
}

// Session is what a Runner needs of the session it runs commands for.
type Session interface {
	// Checkpoint takes a checkpoint named name: rollback to it undoes the
	// run.
	Checkpoint(name string) (memfs.CheckpointInfo, error)
	// DropIgnored takes the paths git's ignore rules exclude out of
	// lists, and counts them.
	DropIgnored(lists ...*[]string) int
	// Warn tells the operator what went wrong without failing the call.
	Warn(format string, args ...any)
	// RunsDir is where a durable session keeps its runs' output; "" for
	// a session in memory only.
	RunsDir() string
}

// Gate is the reviewer's queue, which a run's request for the network
// waits in (approval.Gate).
type Gate interface {
	Submit(req *approval.Request, picks chan<- *approval.PickAsk) (*approval.Ticket, error)
	Withdraw(id, why string) error
}

// Config is what a Runner is made with.
type Config struct {
	Options   Options
	Workspace Workspace
	Session   Session
	Gate      Gate
	// Worker and SessionID name the worker and the session on a request
	// for the network.
	Worker, SessionID string
	// Wait is how long one call waits for a reviewer to answer a request
	// for the network (the session's push wait).
	Wait time.Duration
}

// A Runner is a session's part for commands: one run at a time, each in
// the sandbox on the session's mirror of the workspace.
type Runner struct {
	cfg     Config
	opts    Options
	ws      Workspace
	mu      sync.Mutex // one run at a time
	mirror  *mirror.Mirror
	n       int
	outputs []*output

	// The reviewer's network approvals for this session, and requests
	// still waiting (by command line), which a later call waits on.
	netAll      bool
	netCommands map[string]bool
	netPending  map[string]*approval.Ticket

	stamper stamper // the mirror's file times (stamp.go)
	// ownCache is what runs added to the session's own cache (no
	// worker's cache), counted against the workspace's quota.
	ownCache int64
}

// New makes a Runner; its mirror is made at the first run.
func New(c Config) *Runner {
	return &Runner{cfg: c, opts: c.Options, ws: c.Workspace}
}

// Mode is what runs may do (the operator's choice).
func (r *Runner) Mode() Mode { return r.opts.Mode }

// Close saves the worker's stamps and removes the mirror, after the run
// in flight if there is one.
func (r *Runner) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mirror != nil {
		r.saveStamps()
		r.mirror.Close()
	}
}

// Resume takes up the outputs a durable session kept in dir (see
// output.go), before the first run.
func (r *Runner) Resume(dir string) { r.resumeOutputs(dir) }
