package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/sandbox/mirror"
)

// Run runs a command in the sandbox on the workspace, after a checkpoint,
// and brings what it changed into the workspace through the path guard,
// the deny list and the quotas. The caller has checked that the sandbox
// is available.
func (r *Runner) Run(ctx context.Context, a Args, progress Progress) (Result, error) {
	if progress == nil {
		progress = func(float64, float64, string) {}
	}
	argv, dir, timeout, err := r.check(a)
	if err != nil {
		return Result{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res, err := r.begin(ctx, a, argv, dir, progress)
	if err != nil {
		return res, err
	}
	start, err := r.sync(ctx, &res)
	if err != nil {
		return res, err
	}
	overQuota, err := r.jail(ctx, &res, spec{argv: argv, dir: dir, stdin: a.Stdin, timeout: timeout}, progress)
	if err != nil {
		return res, err
	}
	return res, r.bringBack(&res, start, overQuota)
}

// check checks a run's arguments: the command, the directory it runs in
// (slash-separated, "" the root) and its timeout.
func (r *Runner) check(a Args) (argv []string, dir string, timeout time.Duration, err error) {
	if argv, err = runArgv(a); err != nil {
		return nil, "", 0, err
	}
	if dir, err = r.cwd(a.Cwd); err != nil {
		return nil, "", 0, err
	}
	maxT := r.opts.MaxTimeout
	if maxT <= 0 {
		maxT = DefaultTimeout
	}
	timeout = a.Timeout
	switch {
	case timeout < 0:
		return nil, "", 0, errors.New("timeout must be positive (seconds)")
	case timeout == 0:
		timeout = min(DefaultTimeout, maxT)
	case timeout > maxT:
		return nil, "", 0, fmt.Errorf("timeout %s is more than the %s the operator allows; give at most %d seconds", timeout, maxT, int(maxT.Seconds()))
	}
	return argv, dir, timeout, nil
}

// cwd is the workspace directory cwd names, as the jail takes it.
func (r *Runner) cwd(cwd string) (string, error) {
	dir := strings.Trim(cwd, "/")
	if dir == "." {
		dir = ""
	}
	if dir == "" {
		return "", nil
	}
	comps, err := pathguard.CheckPath(dir)
	if err != nil {
		return "", err
	}
	dir = strings.Join(comps, "/")
	if fi, err := r.ws.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("cwd %q is not a directory of the workspace; give one that list_files shows, or omit cwd for the root", cwd)
	}
	return dir, nil
}

// begin gets the network if the run asks for it, names the run and takes
// the checkpoint before it.
func (r *Runner) begin(ctx context.Context, a Args, argv []string, dir string, progress Progress) (Result, error) {
	network, by := r.opts.Mode == Danger, "operator"
	if a.Network && !network {
		var err error
		// A grant is for the line, in this directory (what the run will
		// reach is this runner's, the same for every run).
		key := strconv.Quote(strings.Join(argv, " ")) + " in " + strconv.Quote(dir)
		if by, err = r.askNetwork(ctx, key, a.Command, strings.Join(argv, " "), dir, a.Reason, progress); err != nil {
			return Result{}, err
		}
		network = true
	}
	r.n++
	res := Result{ID: fmt.Sprintf("run-%d", r.n), Network: network}
	if network {
		res.NetworkBy = by
	}
	cp, err := r.cfg.Session.Checkpoint(fmt.Sprintf("before-%s-%d", res.ID, time.Now().Unix()))
	if err != nil {
		return res, fmt.Errorf("the checkpoint before the run: %w", err)
	}
	res.Checkpoint = cp.Name
	return res, nil
}

// sync brings the mirror up to the workspace (making it at the first
// run) and empties its upper layer, and returns what it now holds.
func (r *Runner) sync(ctx context.Context, res *Result) (*memfs.Snapshot, error) {
	t0 := time.Now()
	if r.mirror == nil {
		uid, gid := sandbox.HostUser()
		m, err := mirror.New(mirror.Parent(r.opts.MirrorDir), uid, gid)
		if err != nil {
			return nil, fmt.Errorf("making the run's mirror: %w", err)
		}
		r.mirror = m
		r.stampFirstSync()
	}
	start := r.ws.Snapshot()
	var err error
	if _, res.Unread, err = r.mirror.Sync(ctx, start); err != nil {
		return nil, err
	}
	r.stamp(start)
	if err := r.mirror.Reset(); err != nil {
		return nil, err
	}
	res.Sync = time.Since(t0)
	return start, nil
}

// spec is what of a run's arguments the jail takes.
type spec struct {
	argv    []string
	dir     string
	stdin   string
	timeout time.Duration
}

// jail runs the command, watched, and keeps its output; overQuota says
// the watch stopped it for the workspace's quota.
func (r *Runner) jail(ctx context.Context, res *Result, sp spec, progress Progress) (overQuota bool, err error) {
	cache, endCache, err := r.beginCache()
	if err != nil {
		return false, err
	}
	report := &sandbox.Report{}
	// Before the watch starts: the spec may empty the session's own
	// cache, on the tmpfs whose growth the watch measures from its start.
	jspec := r.sandboxSpec(sp, res.Network, cache, report)
	var stdin io.Reader
	if sp.stdin != "" {
		stdin = strings.NewReader(sp.stdin)
	}
	stdout, stderr := newKeeper(runKept), newKeeper(runKept)
	rctx, cancel := context.WithTimeout(ctx, sp.timeout)
	defer cancel()
	killed := make(chan string, 1)
	go r.watch(rctx, jspec.Upper, report, cancel, killed, progress, sp.timeout)
	began := time.Now()
	code, err := sandbox.Run(rctx, jspec, stdin, stdout, stderr)
	res.Duration = time.Since(began)
	r.cacheKept(report)
	res.CacheDropped = report.CacheDropped
	endCache()
	cancel()
	select {
	case res.Killed = <-killed:
		overQuota = true
	default:
		res.Killed = report.Killed // its memory budget
	}
	switch {
	case res.Killed != "":
		code, err = -1, nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		res.TimedOut, code, err = true, -1, nil
	}
	if err != nil {
		return overQuota, err
	}
	res.Exit = code
	out := &output{id: res.ID, stdout: stdout.buf.Bytes(), stderr: stderr.buf.Bytes(), cutOut: stdout.cut, cutErr: stderr.cut}
	res.Stdout = shown(out.stdout, out.cutOut, res.ID, "stdout")
	res.Stderr = shown(out.stderr, out.cutErr, res.ID, "stderr")
	r.keep(out, r.cfg.Session.RunsDir())
	return overQuota, nil
}

// sandboxSpec is the jail's Spec for a run of sp on the mirror, with its
// cache at cache.
func (r *Runner) sandboxSpec(sp spec, network bool, cache string, report *sandbox.Report) sandbox.Spec {
	lower, upper, work, root := r.mirror.Dirs()
	// RLIMIT_FSIZE would bind build caches in /tmp too: the workspace's
	// own per-file and total quotas hold when its changes come in, and
	// the watch ends a run whose writes outgrow the total.
	wl := r.ws.Limits()
	return sandbox.Spec{Argv: sp.argv, Dir: sp.dir, Env: runEnv(network, r.opts.Env),
		Lower: lower, Upper: upper, Work: work, Root: root, Cache: cache,
		ReadOnly: r.opts.ReadOnly, Network: network, AllowHosts: r.opts.AllowHosts, Limits: r.opts.Limits,
		Scratch:   sandbox.Bound{Bytes: wl.MaxTotalBytes, Files: int64(wl.MaxFiles)},
		CacheRoom: r.cacheRoom(wl), Report: report}
}

// bringBack brings what the run changed into the workspace (unless the
// mode is read-only or the run outgrew the quota), lets the mirror keep
// what the workspace took, and empties the upper layer.
func (r *Runner) bringBack(res *Result, start *memfs.Snapshot, overQuota bool) error {
	t1 := time.Now()
	var changes []mirror.Change
	if !overQuota {
		lim := r.ws.Limits()
		var err error
		changes, err = r.mirror.Changes(lim.MaxFileBytes, lim.MaxTotalBytes)
		switch {
		case errors.Is(err, mirror.ErrChangesOverQuota):
			// Sparse files the watch did not count: as over the quota.
			overQuota, res.Killed = true, "the files it wrote are larger in all than the workspace's quota (sparse files count at their size)"
		case err != nil:
			return fmt.Errorf("reading what the run changed: %w", err)
		}
	}
	if overQuota {
		// Over the quota: nothing of it comes in, and it costs nothing
		// to drop (the upper layer is renamed aside), however many
		// files it made.
		res.Refused = []memfs.Refused{{Path: ".", Err: errRunOverQuota}}
		res.Apply = time.Since(t1)
		if err := r.mirror.Reset(); err != nil {
			return fmt.Errorf("dropping what the run wrote: %w", err)
		}
		return nil
	}
	if r.opts.Mode == ReadOnly {
		res.Discarded = len(changes)
	} else {
		res.Refused = mirror.Apply(r.ws, start, changes)
		after := r.ws.Snapshot()
		res.Created, res.Modified, res.Deleted = mirror.Effect(start, after, changes)
		res.Ignored = r.cfg.Session.DropIgnored(&res.Created, &res.Modified, &res.Deleted)
		// What the workspace took is already written: the mirror keeps
		// it instead of writing it again before the next run.
		r.mirror.Promote(start, after, changes)
	}
	res.Apply = time.Since(t1)
	if err := r.mirror.Reset(); err != nil {
		// The run's answer stands: what it changed is in the workspace.
		// The next run resets again before it starts, and fails there
		// if it still cannot; meanwhile the upper layer holds memory.
		r.cfg.Session.Warn("emptying the run's upper layer failed: %v", err)
	}
	return nil
}

// errRunOverQuota is what a run stopped for its quota left: nothing.
var errRunOverQuota = fmt.Errorf("%w: the run was stopped for holding more than the workspace's quota, and nothing it wrote was kept; "+
	"make it write less (or delete files from the workspace) and run it again", memfs.ErrQuotaExceeded)
