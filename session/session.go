package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session/push"
	"github.com/airlock-dev/airlock/session/runs"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
)

// Options are the operator's settings for a session: they come from
// airlock serve's command line, never from the worker's file.
type Options struct {
	// Gate decides pushes. Required.
	Gate *approval.Gate
	// Timeout is how long git_push waits for a reviewer before it answers
	// that the request is still pending; 0 means 5 minutes.
	Timeout time.Duration
	// Retries bounds how often one push rebases and asks again when its
	// target moved between the request and the push; 0 means 5.
	Retries int
	// OpenTarget opens a target; nil means OpenTarget.
	OpenTarget func(ctx context.Context, spec *worker.TargetSpec) (targets.Target, error)
	// Rules configures the push risk flags.
	Rules approval.Rules
	// Run enables the run tool; nil leaves it out.
	Run *RunOptions
	// Now is the sandbox's clock (file times, checkpoints, commits); nil
	// is time.Now.
	Now func() time.Time
	// State is the session's state in a store (a *StateDir for the local
	// files): with it, every change is saved there before the call that
	// made it answers (a durable session); nil keeps the session in
	// memory only.
	State store.Lease
	// DropUnchanged removes a new durable session's directory when it
	// closes having changed nothing since it started (no change of the
	// workspace, commit, checkpoint, pull or push was ever saved): there
	// is nothing in it to resume or rescue. A resumed session is kept.
	DropUnchanged bool
	// Warn tells the operator of a failure no call can answer for (a save
	// after a push that answered long ago, a withdrawal the ledger could
	// not record); nil writes it to stderr.
	Warn func(msg string)
}

// Progress reports how a long call is going (MCP progress notifications).
type Progress func(done, total float64, message string)

// DefaultPushWait is how long git_push waits for a reviewer before it
// answers "still waiting, call again": well under the tool timeouts of
// common clients (Codex gives up at 300 s), so that the answer arrives.
const DefaultPushWait = 2 * time.Minute

// Session is one worker's sandbox and the one owner of its state: the
// workspace, the staging area, the object store, the targets it opened,
// the checkpoints' bases and the pushes in flight. The tool surface
// (gittools) only decodes arguments and words answers; every change to
// this state goes through a method here. It is safe for concurrent use.
type Session struct {
	id    string // the state directory's id, or a random one in memory
	w     *worker.Worker
	ws    *memfs.Workspace
	store *staging.Store
	repos []*repo // by name; one, named "", for a single-repository worker
	gate  *approval.Gate
	opts  Options

	// mu serialises every change to the sandbox's git side (area, store,
	// base, pushes, checkpoints' bases) and object collection: nothing
	// writes objects the collector cannot see the roots of. It is never
	// held while waiting for a reviewer or a target's push, nor while a
	// target is opened (openMu). Lock order: Session.mu, then Area's,
	// then Workspace's and Store's; the gate's lock is taken under
	// Session.mu (Withdraw), never the other way (the gate calls a pick
	// with its own lock released).
	mu     sync.Mutex
	pushes *push.Book                   // pushes in flight and the commits that reached a target
	cps    map[string]map[string]cpBase // each checkpoint's bases, by name, then by repository

	// openMu serialises opening targets (a local one's open recovers an
	// interrupted push) and guards opened, the targets by id. It is never
	// taken with Session.mu held: a call opens its targets, and asks a
	// target without a branch for its default one, before it takes
	// Session.mu (targetRef; planAutoPull for New, preopenPushes for
	// Resume), so that a slow target (GitHub over the network) holds up
	// no other call of the session (TestOpenTargetNotUnderLock). What an
	// opened target is asked under Session.mu is what must be consistent
	// with the sandbox's git side: Fetch writes the store, whose writers
	// all hold Session.mu for the collector (collectLocked), and a resume's
	// reads of the pushes it takes up (nothing answers before it ends). A
	// push reads its facts and keeps the ledger's head without it
	// (session/push).
	openMu sync.Mutex
	opened map[string]targets.Target

	run *runs.Runner // nil without Options.Run

	pst       *persister // nil for a session in memory only
	recovered *Recovered // what Resume found; nil for a new session
	closed    bool
	dropped   bool // Close removed the state directory (Options.DropUnchanged)
}

// New makes a worker's sandbox and runs its auto_pull. With a state
// directory, the session is saved there from the start.
func New(ctx context.Context, w *worker.Worker, opts Options) (*Session, error) {
	s, err := newSession(w, opts)
	if err != nil {
		return nil, err
	}
	// The targets auto_pull reads from are opened before the lock is
	// taken, as every call opens them (Session.openMu).
	plans := make([]*autoPlan, len(s.repos))
	for i, r := range s.repos {
		if plans[i], err = s.planAutoPull(ctx, r); err != nil {
			return nil, fmt.Errorf("%sauto_pull: %w", r.label(), err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.repos {
		if err := s.autoPull(ctx, r, plans[i]); err != nil {
			return nil, fmt.Errorf("%sauto_pull: %w", r.label(), err)
		}
	}
	s.collectLocked()
	if s.opts.State != nil {
		if err := s.startSaving(s.opts.State); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newSession makes an empty sandbox for w.
func newSession(w *worker.Worker, opts Options) (*Session, error) {
	if opts.Gate == nil {
		return nil, errors.New("session: a session needs a gate")
	}
	opts.State = noLease(opts.State)
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultPushWait
	}
	if opts.OpenTarget == nil {
		opts.OpenTarget = OpenTarget
	}
	fsOpts := []memfs.Option{memfs.WithLimits(w.Limits), memfs.WithDeny(w.Deny...),
		memfs.WithKeptBy("the base and the staged commits: git_discard staged commits you no longer need, or git_push them, to release what only they hold")}
	if opts.Now != nil {
		// One clock for the sandbox: file times, checkpoints and commits.
		fsOpts = append(fsOpts, memfs.WithClock(opts.Now))
	}
	ws, err := memfs.New(fsOpts...)
	if err != nil {
		return nil, err
	}
	// One budget: the object store may hold what the workspace may, and
	// everything the session fetches, imports or stages is counted there
	// until collection lets it go.
	store := staging.NewStore(ws.Limits().MaxTotalBytes)
	repos, err := newRepos(w, ws, store, staging.Config{
		Author: staging.Signature{Name: w.Author.Name, Email: w.Author.Email},
		Now:    opts.Now,
	})
	if err != nil {
		return nil, err
	}
	id := "mem-" + randomHex(6)
	if opts.State != nil {
		id = opts.State.SessionID()
	}
	s := &Session{id: id, w: w, ws: ws, store: store, repos: repos, gate: opts.Gate, opts: opts,
		opened: map[string]targets.Target{}, cps: map[string]map[string]cpBase{}}
	s.pushes = s.newPushes()
	s.run = newRunner(s, opts.Run)
	return s, nil
}

// ID names the session: its state directory's id when it is durable
// (airlock sessions list shows it), else one made up in memory.
func (s *Session) ID() string { return s.id }

// Worker returns the session's worker configuration.
func (s *Session) Worker() *worker.Worker { return s.w }

// Workspace returns the sandbox's filesystem, which the file tools read and
// write directly: its own locks and guard keep it consistent.
func (s *Session) Workspace() *memfs.Workspace { return s.ws }

// Close ends the session in this process. A session in memory only
// withdraws the pushes still waiting for a reviewer (their worker is gone)
// and waits for those already decided to end; a durable one keeps them, saved, to be offered again when it resumes, and
// closes its journal.
func (s *Session) Close() {
	if s.run != nil {
		s.run.Close()
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	if s.pst != nil {
		s.closeSavingLocked()
		s.mu.Unlock()
		s.store.CloseSources()
		return
	}
	s.pushes.WithdrawAllLocked("the worker's session ended")
	ends := s.pushes.EndsLocked()
	s.mu.Unlock()
	// A decided push goes on to its target; the end waits for it outside
	// the lock its driver takes (see push.AwaitEnds).
	if !push.AwaitEnds(ends, 30*time.Second) {
		s.warn("the session ended with a push still on its way to its target after 30s; it goes on without the session")
	}
	s.store.CloseSources()
}

// resolveSpec finds a target of r by name ("" or "default": the default
// one).
func (r *repo) resolveSpec(name string) (*worker.TargetSpec, error) {
	name = strings.TrimSpace(name)
	if name == "" || name == "default" {
		return r.cfg.DefaultTarget, nil
	}
	if t, ok := r.cfg.Targets[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("no target is named %q; the targets are %s", name, strings.Join(r.cfg.TargetNames(), ", "))
}
