package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/memfs"
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
	// State is the session's directory: with it, every change is saved
	// there before the call that made it answers (a durable session);
	// nil keeps the session in memory only.
	State *StateDir
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

// OpenTarget opens the target a spec names, as its kind opens one, where
// the operator's environment says (targets.Environ).
func OpenTarget(ctx context.Context, spec *worker.TargetSpec) (targets.Target, error) {
	return targets.Open(ctx, spec.Type, spec.Where(), targets.Environ())
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
	// held while waiting for a reviewer or a target's push. Lock order:
	// Session.mu, then Area's, then Workspace's and Store's; the gate's
	// lock is taken under Session.mu (Withdraw), never the other way (the
	// gate calls a pick with its own lock released).
	mu        sync.Mutex
	pushes    map[string]*push             // pushes in flight, by request id
	byCommit  map[pushKey]*push            // the same, by what they push (and what they pushed before a rebase)
	published map[plumbing.Hash]string     // commits that reached a target: where
	cps       map[string]map[string]cpBase // each checkpoint's bases, by name, then by repository

	openMu sync.Mutex
	opened map[string]targets.Target

	run *runner // nil without Options.Run

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
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.repos {
		if err := s.autoPull(ctx, r); err != nil {
			return nil, fmt.Errorf("%sauto_pull: %w", r.label(), err)
		}
	}
	s.collectLocked()
	if opts.State != nil {
		if err := s.startSaving(opts.State, nil); err != nil {
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
		id = opts.State.ID
	}
	s := &Session{id: id, w: w, ws: ws, store: store, repos: repos, gate: opts.Gate, opts: opts,
		opened: map[string]targets.Target{}, pushes: map[string]*push{}, byCommit: map[pushKey]*push{},
		published: map[plumbing.Hash]string{}, cps: map[string]map[string]cpBase{}}
	if opts.Run != nil {
		s.run = &runner{opts: *opts.Run}
	}
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
// withdraws the pushes still waiting for a reviewer (their worker is gone);
// a durable one keeps them, saved, to be offered again when it resumes, and
// closes its journal.
func (s *Session) Close() {
	if s.run != nil {
		s.run.mu.Lock()
		if s.run.mirror != nil {
			s.run.saveStamps()
			s.run.mirror.Close()
		}
		s.run.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	defer s.store.CloseSources()
	if s.pst != nil {
		s.closeSavingLocked()
		return
	}
	for _, p := range s.pushes {
		// One that is landing goes on; one the ledger cannot withdraw
		// stays open for the reviewer, and the operator is told.
		if err := s.withdrawLocked(p, "the worker's session ended"); err != nil && !errors.Is(err, errPushLanding) {
			s.warn("%v", err)
		}
	}
}

// target opens (once) the target of spec.
func (s *Session) target(ctx context.Context, spec *worker.TargetSpec) (targets.Target, error) {
	key := spec.ID()
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if t, ok := s.opened[key]; ok {
		return t, nil
	}
	t, err := s.opts.OpenTarget(ctx, spec)
	if err != nil {
		return nil, err
	}
	s.opened[key] = t
	return t, nil
}

// targetRef opens spec's target and names the full ref it pushes to and
// pulls from: its branch, or the target's default branch.
func (s *Session) targetRef(ctx context.Context, spec *worker.TargetSpec) (targets.Target, string, error) {
	t, err := s.target(ctx, spec)
	if err != nil {
		return nil, "", err
	}
	branch := spec.Branch
	if branch == "" {
		if db, ok := t.(targets.DefaultBrancher); ok {
			if b, err := db.DefaultBranch(ctx); err == nil && b != "" {
				branch = b
			}
		}
	}
	if branch == "" {
		branch = "main"
	}
	ref, err := targets.BranchRef(branch)
	return t, ref, err
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

func (s *Session) autoPull(ctx context.Context, r *repo) error {
	// Entries from the default target's branch make the base (one pull of
	// all their paths; "." means everything). When that branch does not
	// exist yet, entries from another branch of the same repository make
	// the base instead: the new branch forks from the branch its files came
	// from, as `git switch -c` would. Entries from anywhere else come in as
	// the worker's own files.
	def := r.cfg.DefaultTarget
	sameRepo := func(src *worker.TargetSpec) bool { return src.ID() == def.ID() }
	var base *worker.TargetSpec
	for _, ap := range r.cfg.AutoPull {
		if sameRepo(ap.Source) && ap.Source.Branch == def.Branch {
			base = def
		}
	}
	// forked: the default branch exists and was forked from another branch
	// of its repository that auto_pull names. Its paths come from the
	// default branch, which has its own history since the fork (what the
	// worker pushed, what others pushed there): as after `git switch
	// reports`, the other branch's later changes come in only when asked
	// for (git_pull with that source).
	forked := false
	if base == nil {
		for _, ap := range r.cfg.AutoPull {
			if sameRepo(ap.Source) {
				exists, err := s.branchExists(ctx, def)
				if err != nil {
					return err
				}
				if exists {
					base, forked = def, true
				} else {
					base = ap.Source
				}
				break
			}
		}
	}
	var basePaths []string
	all := false
	imports := map[string][]string{}
	specs := map[string]*worker.TargetSpec{}
	for _, ap := range r.cfg.AutoPull {
		if base != nil && sameRepo(ap.Source) && (forked || ap.Source.Branch == base.Branch) {
			all = all || ap.Path == "."
			basePaths = append(basePaths, ap.Path)
			continue
		}
		key := ap.Source.String()
		specs[key] = ap.Source
		imports[key] = append(imports[key], ap.Path)
	}
	if all {
		basePaths = nil
	}
	if base != nil {
		// A default branch that does not exist yet is created by the
		// first push.
		if _, err := s.seed(ctx, r, base, basePaths); err != nil && !errors.Is(err, targets.ErrRefNotFound) {
			return err
		}
	}
	keys := make([]string, 0, len(imports))
	for k := range imports {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := s.importFiles(ctx, r, specs[k], imports[k], ""); err != nil {
			return err
		}
	}
	return nil
}

// branchExists reports whether spec's branch exists on its target.
func (s *Session) branchExists(ctx context.Context, spec *worker.TargetSpec) (bool, error) {
	t, ref, err := s.targetRef(ctx, spec)
	if err != nil {
		return false, err
	}
	head, err := t.Head(ctx, ref)
	return !head.IsZero(), err
}

// seed makes the workspace the tree of spec's branch (all, or paths).
func (s *Session) seed(ctx context.Context, r *repo, spec *worker.TargetSpec, paths []string) (pullResult, error) {
	t, ref, err := s.targetRef(ctx, spec)
	if err != nil {
		return pullResult{}, err
	}
	head, err := t.Fetch(ctx, ref, paths, s.store)
	if err != nil {
		return pullResult{}, err
	}
	refused, err := r.area.SeedFrom(head, paths)
	if err != nil {
		return pullResult{}, err
	}
	r.base, r.baseRef = spec, ref
	n := 0
	r.ws.Base().Walk(func(memfs.Entry) error { n++; return nil })
	return pullResult{Head: head, Ref: ref, Target: t, Files: n, Refused: refused}, nil
}

type pullResult struct {
	Head    plumbing.Hash
	Ref     string
	Target  targets.Target
	Files   int
	Updated []string
	Refused []memfs.Refused
}

// importFiles copies the files of spec's branch at or under paths into
// r's part of the workspace (under dest), as the worker's own new changes.
func (s *Session) importFiles(ctx context.Context, r *repo, spec *worker.TargetSpec, paths []string, dest string) (pullResult, error) {
	t, ref, err := s.targetRef(ctx, spec)
	if err != nil {
		return pullResult{}, err
	}
	// The session's own store, so that the import counts against the one
	// budget; what only the import needed is collected afterwards.
	head, err := t.Fetch(ctx, ref, paths, s.store)
	if err != nil {
		return pullResult{}, err
	}
	scratch, err := memfs.New(memfs.WithLimits(s.w.Limits), memfs.WithDeny(s.w.Deny...))
	if err != nil {
		return pullResult{}, err
	}
	sa, err := staging.New(scratch, s.store, staging.Config{Author: staging.Signature{Name: "x", Email: "x@x"}})
	if err != nil {
		return pullResult{}, err
	}
	refused, err := sa.SeedFrom(head, paths)
	if err != nil {
		return pullResult{}, err
	}
	res := pullResult{Head: head, Ref: ref, Target: t, Refused: refused}
	err = scratch.Base().Walk(func(e memfs.Entry) error {
		p := e.Path
		if dest != "" {
			p = strings.TrimSuffix(dest, "/") + "/" + p
		}
		if b, ok := r.ws.Base().Lookup(p); ok && b.Same(e) {
			// What the base already holds is not the worker's change.
			return nil
		}
		at := r.path(p) // where it goes in the workspace
		data, werr := e.Content()
		switch {
		case werr != nil:
		case e.Mode&fs.ModeSymlink != 0:
			werr = s.ws.Symlink(string(data), at)
		default:
			if werr = s.ws.WriteFile(at, data, e.Mode.Perm()); werr == nil {
				werr = s.ws.Chmod(at, e.Mode.Perm())
			}
		}
		if werr != nil {
			res.Refused = append(res.Refused, memfs.Refused{Path: p, Err: werr})
			return nil
		}
		res.Updated = append(res.Updated, p)
		res.Files++
		return nil
	})
	return res, err
}
