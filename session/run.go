package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/textcap"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session/runcache"
)

// RunMode is what a run may do, chosen by the operator on airlock serve,
// never by a worker file.
type RunMode string

const (
	// RunWorkspaceWrite: runs write into the workspace (the default).
	RunWorkspaceWrite RunMode = "workspace-write"
	// RunReadOnly: runs see the workspace; what they write is discarded.
	RunReadOnly RunMode = "read-only"
	// RunDanger: as workspace-write, with the host's network.
	RunDanger RunMode = "danger"
)

// RunOptions are the operator's settings for the run tool. A session
// without them has no run tool.
type RunOptions struct {
	Mode RunMode
	// ReadOnly lists host paths bound read-only into every run (a Go
	// module cache, a package cache).
	ReadOnly []string
	// Env is added to the environment every run gets (KEY=VALUE).
	Env []string
	// MaxTimeout caps a run's timeout; 0 means 10 minutes, also the
	// default timeout.
	MaxTimeout time.Duration
	Limits     sandbox.Limits
	// DenyTCP lists loopback ports a run with the network may not reach
	// (airlock's own HTTP port).
	DenyTCP []uint16
	// MirrorDir is where the session's mirror of the workspace lives: a
	// tmpfs (default /dev/shm, else the system's temporary directory).
	MirrorDir string
	// Cache is the worker's cache, which runs see at ~/.cache (see
	// runcache.go); nil: a cache of the session's own, gone with it.
	Cache *runcache.Cache
}

// DefaultRunTimeout is a run's timeout unless the worker or the operator
// says less.
const DefaultRunTimeout = 10 * time.Minute

// Bounds on what a run answers and keeps.
const (
	runShown = 16 << 10 // of each stream, in the answer
	runKept  = 8 << 20  // of each stream, for RunOutput
	runsKept = 8        // runs whose output stays readable
)

// RunArgs is one command to run.
type RunArgs struct {
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

// RunResult is how a run went.
type RunResult struct {
	ID       string // names the run's output for RunOutput
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

type runOutput struct {
	id             string
	stdout, stderr []byte
	cutOut, cutErr int64
	file           string // where a durable session keeps it (runoutput.go); then the streams are not in memory
}

// runner is the session's part for commands.
type runner struct {
	opts    RunOptions
	mu      sync.Mutex // one run at a time
	mirror  *sandbox.Mirror
	n       int
	outputs []*runOutput

	// The reviewer's network approvals for this session, and requests
	// still waiting (by command line), which a later call waits on.
	netAll      bool
	netCommands map[string]bool
	netPending  map[string]*approval.Ticket

	stamper stamper // the mirror's file times (runcache.go)
	// ownCache is what runs added to the session's own cache (no
	// worker's cache), counted against the workspace's quota.
	ownCache int64
}

// ReadOnly reports whether the operator made the workspace read-only
// (airlock serve --run read-only): runs' writes are discarded and the file
// tools may not write either.
func (s *Session) ReadOnly() bool { return s.run != nil && s.run.opts.Mode == RunReadOnly }

// Networked reports whether every run has the host's network (airlock
// serve --danger); otherwise a run has it only when a reviewer allows it.
func (s *Session) Networked() bool { return s.run != nil && s.run.opts.Mode == RunDanger }

// MayRun reports whether the session offers the run tool: the operator
// enabled commands, and the sandbox has not been found impossible to
// build here (it may still be being probed: CanRun, and Run, wait for
// the answer).
func (s *Session) MayRun() bool {
	if s.opts.Run == nil {
		return false
	}
	err, done := sandbox.Probed()
	return !done || err == nil
}

// CanRun reports whether the session has the run tool, and why not,
// waiting for the sandbox's probe if it has not answered yet.
func (s *Session) CanRun() error {
	if s.opts.Run == nil {
		return errors.New("the operator did not enable commands")
	}
	return sandbox.Available()
}

// Run runs a command in the sandbox on the workspace, after a checkpoint,
// and brings what it changed into the workspace through the path guard,
// the deny list and the quotas.
func (s *Session) Run(ctx context.Context, a RunArgs, progress Progress) (RunResult, error) {
	if err := s.CanRun(); err != nil {
		return RunResult{}, fmt.Errorf("run is not available: %w", err)
	}
	if progress == nil {
		progress = func(float64, float64, string) {}
	}
	r := s.run
	argv, err := runArgv(a)
	if err != nil {
		return RunResult{}, err
	}
	dir := strings.Trim(a.Cwd, "/")
	if dir == "." {
		dir = ""
	}
	if dir != "" {
		comps, err := pathguard.CheckPath(dir)
		if err != nil {
			return RunResult{}, err
		}
		dir = strings.Join(comps, "/")
		if fi, err := s.ws.Stat(dir); err != nil || !fi.IsDir() {
			return RunResult{}, fmt.Errorf("cwd %q is not a directory of the workspace; give one that list_files shows, or omit cwd for the root", a.Cwd)
		}
	}
	maxT := r.opts.MaxTimeout
	if maxT <= 0 {
		maxT = DefaultRunTimeout
	}
	timeout := a.Timeout
	switch {
	case timeout < 0:
		return RunResult{}, errors.New("timeout must be positive (seconds)")
	case timeout == 0:
		timeout = min(DefaultRunTimeout, maxT)
	case timeout > maxT:
		return RunResult{}, fmt.Errorf("timeout %s is more than the %s the operator allows; give at most %d seconds", timeout, maxT, int(maxT.Seconds()))
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	network, by := r.opts.Mode == RunDanger, "operator"
	if a.Network && !network {
		var err error
		if by, err = s.askNetwork(ctx, r, strings.Join(argv, " "), a.Command, dir, a.Reason, progress); err != nil {
			return RunResult{}, err
		}
		network = true
	}
	r.n++
	res := RunResult{ID: fmt.Sprintf("run-%d", r.n), Network: network}
	if network {
		res.NetworkBy = by
	}
	cp, err := s.Checkpoint(fmt.Sprintf("before-%s-%d", res.ID, time.Now().Unix()))
	if err != nil {
		return res, fmt.Errorf("the checkpoint before the run: %w", err)
	}
	res.Checkpoint = cp.Name

	t0 := time.Now()
	if r.mirror == nil {
		if r.mirror, err = sandbox.NewMirror(mirrorParent(r.opts.MirrorDir)); err != nil {
			return res, fmt.Errorf("making the run's mirror: %w", err)
		}
		r.stampFirstSync()
	}
	start := s.ws.Snapshot()
	if _, res.Unread, err = r.mirror.Sync(ctx, start); err != nil {
		return res, err
	}
	r.stamp(start)
	if err := r.mirror.Reset(); err != nil {
		return res, err
	}
	res.Sync = time.Since(t0)

	lower, upper, work, root := r.mirror.Dirs()
	// RLIMIT_FSIZE would bind build caches in /tmp too: the workspace's
	// own per-file and total quotas hold when its changes come in, and
	// the watch ends a run whose writes outgrow the total.
	lim := r.opts.Limits
	cache, endCache, err := r.beginCache()
	if err != nil {
		return res, err
	}
	wl := s.ws.Limits()
	report := &sandbox.Report{}
	spec := sandbox.Spec{Argv: argv, Dir: dir, Env: runEnv(network, r.opts.Env),
		Lower: lower, Upper: upper, Work: work, Root: root, Cache: cache,
		ReadOnly: r.opts.ReadOnly, Network: network, DenyTCP: r.opts.DenyTCP, Limits: lim,
		Scratch:   sandbox.Bound{Bytes: wl.MaxTotalBytes, Files: int64(wl.MaxFiles)},
		CacheRoom: r.cacheRoom(wl), Report: report}
	var stdin io.Reader
	if a.Stdin != "" {
		stdin = strings.NewReader(a.Stdin)
	}
	stdout, stderr := newKeeper(runKept), newKeeper(runKept)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	killed := make(chan string, 1)
	go s.watch(rctx, upper, report, cancel, killed, progress, timeout)
	began := time.Now()
	code, err := sandbox.Run(rctx, spec, stdin, stdout, stderr)
	res.Duration = time.Since(began)
	r.cacheKept(report)
	res.CacheDropped = report.CacheDropped
	endCache()
	cancel()
	overQuota := false
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
		return res, err
	}
	res.Exit = code
	out := &runOutput{id: res.ID, stdout: stdout.buf.Bytes(), stderr: stderr.buf.Bytes(), cutOut: stdout.cut, cutErr: stderr.cut}
	res.Stdout = shown(out.stdout, out.cutOut, res.ID, "stdout")
	res.Stderr = shown(out.stderr, out.cutErr, res.ID, "stderr")
	r.keep(out, s.runsDir())

	t1 := time.Now()
	var changes []sandbox.Change
	if !overQuota {
		lim := s.ws.Limits()
		changes, err = r.mirror.Changes(lim.MaxFileBytes, lim.MaxTotalBytes)
		switch {
		case errors.Is(err, sandbox.ErrChangesOverQuota):
			// Sparse files the watch did not count: as over the quota.
			overQuota, res.Killed = true, "the files it wrote are larger in all than the workspace's quota (sparse files count at their size)"
		case err != nil:
			return res, fmt.Errorf("reading what the run changed: %w", err)
		}
	}
	if overQuota {
		// Over the quota: nothing of it comes in, and it costs nothing
		// to drop (the upper layer is renamed aside), however many
		// files it made.
		res.Refused = []memfs.Refused{{Path: ".", Err: errRunOverQuota}}
		res.Apply = time.Since(t1)
		if err := r.mirror.Reset(); err != nil {
			return res, fmt.Errorf("dropping what the run wrote: %w", err)
		}
		return res, nil
	}
	if r.opts.Mode == RunReadOnly {
		res.Discarded = len(changes)
	} else {
		res.Refused = s.applyRun(start, changes)
		after := s.ws.Snapshot()
		res.Created, res.Modified, res.Deleted = runEffect(start, after, changes)
		res.Ignored = s.dropIgnored(&res.Created, &res.Modified, &res.Deleted)
		// What the workspace took is already written: the mirror keeps
		// it instead of writing it again before the next run.
		r.mirror.Promote(start, after, changes)
	}
	res.Apply = time.Since(t1)
	if err := r.mirror.Reset(); err != nil {
		// The run's answer stands: what it changed is in the workspace.
		// The next run resets again before it starts, and fails there
		// if it still cannot; meanwhile the upper layer holds memory.
		s.warn("emptying the run's upper layer failed: %v", err)
	}
	return res, nil
}

// errRunOverQuota is what a run stopped for its quota left: nothing.
var errRunOverQuota = fmt.Errorf("%w: the run was stopped for holding more than the workspace's quota, and nothing it wrote was kept; "+
	"make it write less (or delete files from the workspace) and run it again", memfs.ErrQuotaExceeded)

// ErrNetworkPending: the reviewer has not answered a run's request for the
// network yet; calling run again with the same command waits on it.
var ErrNetworkPending = errors.New("the request for the network is still waiting for a reviewer")

// askNetwork gets the reviewer's leave for a run to use the network, and
// returns the scope it was given under. Every request and decision is in
// the ledger (the gate's) before the run starts.
func (s *Session) askNetwork(ctx context.Context, r *runner, key, command, dir, reason string, progress Progress) (string, error) {
	if r.netAll {
		return approval.ScopeSession, nil
	}
	if r.netCommands[key] {
		return approval.ScopeCommand, nil
	}
	if r.netPending == nil {
		r.netPending, r.netCommands = map[string]*approval.Ticket{}, map[string]bool{}
	}
	tk := r.netPending[key]
	if tk == nil {
		shown := command
		if shown == "" {
			shown = key
		}
		var err error
		tk, err = s.gate.Submit(&approval.Request{Kind: approval.KindNetwork, Worker: s.w.Name, Session: s.id,
			Command: shown, Dir: dir, Reason: reason}, nil)
		if err != nil {
			return "", err
		}
		r.netPending[key] = tk
	}
	timer := time.NewTimer(s.opts.Timeout)
	defer timer.Stop()
	progress(0, s.opts.Timeout.Seconds(), "waiting for a reviewer to allow the network (airlock review)")
	select {
	case <-tk.Done():
	case <-timer.C:
		return "", fmt.Errorf("%w (request %s); call run again with the same command and network: true to keep waiting, or run it without the network",
			ErrNetworkPending, tk.Request().ID)
	case <-ctx.Done():
		delete(r.netPending, key)
		if err := s.gate.Withdraw(tk.Request().ID, "the worker's client disconnected"); err != nil && !errors.Is(err, approval.ErrNotPending) {
			// Decided meanwhile is fine; a ledger that cannot take the
			// withdrawal leaves the request open for the reviewer.
			s.warn("the network request %s could not be withdrawn: %v", tk.Request().ID, err)
		}
		return "", ctx.Err()
	}
	delete(r.netPending, key)
	closed, cancel := context.WithCancel(context.Background())
	cancel()
	dec, _, err := tk.Wait(closed)
	if err != nil {
		return "", fmt.Errorf("the network for this run: %w; run it without network: true", err)
	}
	switch dec.Scope {
	case approval.ScopeSession:
		r.netAll = true
		return approval.ScopeSession, nil
	case approval.ScopeCommand:
		r.netCommands[key] = true
		return approval.ScopeCommand, nil
	}
	return "once", nil
}

// RunOutput returns the whole output (as much as was kept) of a run.
func (s *Session) RunOutput(id, stream string) (string, error) {
	if s.run == nil {
		return "", errors.New("run is not available in this session")
	}
	s.run.mu.Lock()
	defer s.run.mu.Unlock()
	var ids []string
	for _, o := range s.run.outputs {
		ids = append(ids, o.id)
		if o.id != id {
			continue
		}
		full, err := o.load()
		if err != nil {
			return "", err
		}
		switch stream {
		case "stdout", "":
			return keptText(full.stdout, full.cutOut), nil
		case "stderr":
			return keptText(full.stderr, full.cutErr), nil
		}
		return "", fmt.Errorf("stream %q: give stdout or stderr", stream)
	}
	if len(ids) == 0 {
		return "", fmt.Errorf("no run %q: nothing has run yet", id)
	}
	return "", fmt.Errorf("no run %q; the runs whose output is kept are %s", id, strings.Join(ids, ", "))
}

func keptText(b []byte, cut int64) string {
	if cut == 0 {
		return string(b)
	}
	return string(b) + fmt.Sprintf("\n[%d more bytes were not kept]", cut)
}

func runArgv(a RunArgs) ([]string, error) {
	switch {
	case a.Command != "" && len(a.Argv) > 0:
		return nil, errors.New("give either command (a shell line) or argv (a program and its arguments), not both")
	case a.Command != "":
		if len(a.Command) > 64<<10 {
			return nil, errors.New("command is longer than 64 KiB; put a script in the workspace and run that")
		}
		return []string{"/bin/sh", "-c", a.Command}, nil
	case len(a.Argv) > 0:
		if a.Argv[0] == "" {
			return nil, errors.New("argv[0] is empty; it names the program to run")
		}
		return a.Argv, nil
	}
	return nil, errors.New("nothing to run: give command, e.g. \"go test ./...\", or argv, e.g. [\"make\", \"test\"]")
}

// runEnv is the environment every run gets: built, never inherited.
func runEnv(network bool, extra []string) []string {
	env := []string{
		"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
		"HOME=" + sandbox.Home, "USER=root", "LANG=C.UTF-8", "TERM=dumb", "TMPDIR=/tmp", "PWD=" + sandbox.Workspace,
		"GOTOOLCHAIN=local", "GOFLAGS=-mod=mod",
	}
	env = append(append(env, cacheEnv...), networkEnv(network)...)
	for _, e := range extra {
		k, _, _ := strings.Cut(e, "=")
		for i := range env {
			if strings.HasPrefix(env[i], k+"=") {
				env = append(env[:i], env[i+1:]...)
				break
			}
		}
		env = append(env, e)
	}
	return env
}

func mirrorParent(dir string) string {
	if dir != "" {
		return dir
	}
	return sandbox.DefaultMirrorDir()
}

// watch reports progress and ends the run when what it holds outgrows
// the workspace's quota, in bytes or in files: the overlay's upper layer
// and the jail's scratch (/tmp, home, /dev/shm) are in memory too, and
// count together.
//
// The scratch is a tmpfs of the run's own, so what it holds is one statfs
// (report.Scratch). The upper layer is a directory of a tmpfs shared with
// others (the mirror's), and counting it walks everything the run wrote,
// which costs a run writing many files more than its writes (and takes a
// core from it), so the walk is the second check: the first is how much
// that filesystem grew since the run started, bytes and inodes, one
// statfs. What the run wrote there is at most that growth (since the
// start, or since the last walk plus what that walk counted); only when
// that passes the quota is the layer walked, and then not more often than
// twice the last walk took.
func (s *Session) watch(ctx context.Context, upper string, report *sandbox.Report, cancel func(), killed chan<- string, progress Progress, timeout time.Duration) {
	lim := s.ws.Limits()
	quota := held{bytes: lim.MaxTotalBytes, files: int64(lim.MaxFiles)}
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	// base is the filesystem's use when the layer was last known to
	// hold counted (at the start, empty; then at each walk).
	base, statfs := fsUsed(upper)
	var counted held
	var nextWalk time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var scratch held
		if b, f, ok := report.Scratch(); ok {
			// The scratch's root and the directories the jail made are
			// not the run's.
			scratch = held{bytes: b, files: max(f-4, 0)}
		}
		now, known := fsUsed(upper)
		known = known && statfs
		// At most what was counted plus what the filesystem grew since.
		bound := counted.plus(held{bytes: now.bytes - base.bytes, files: now.files - base.files})
		if maybe := quota.over(scratch.plus(bound)); maybe != "" || !known {
			if over := quota.over(scratch); over != "" {
				s.kill(killed, cancel, over, quota)
				return
			}
			if time.Now().After(nextWalk) {
				t0 := time.Now()
				bytes := maybe != "files" || !known
				counted = dirHeld(upper, bytes)
				if !bytes {
					counted.bytes = bound.bytes // not counted: still at most that
				}
				base = now
				// A walk takes a core from the run: at most a third
				// of the time.
				nextWalk = time.Now().Add(2 * time.Since(t0))
				if over := quota.over(scratch.plus(counted)); over != "" {
					s.kill(killed, cancel, over, quota)
					return
				}
			}
		}
		if time.Since(last) >= 2*time.Second {
			last = time.Now()
			el := time.Since(start)
			progress(el.Seconds(), timeout.Seconds(), fmt.Sprintf("running (%s so far)", el.Round(time.Second)))
		}
	}
}

func (s *Session) kill(killed chan<- string, cancel func(), over string, quota held) {
	if over == "files" {
		killed <- fmt.Sprintf("it made more than the workspace's %d-file quota (in the workspace, /tmp and its home together)", quota.files)
	} else {
		killed <- fmt.Sprintf("it wrote more than the workspace's %d-byte quota (in the workspace, /tmp and its home together)", quota.bytes)
	}
	cancel()
}

// held is what a run holds somewhere: bytes and files (inodes).
type held struct{ bytes, files int64 }

func (h held) plus(o held) held { return held{h.bytes + o.bytes, h.files + o.files} }

// over names what of h passes the quota q ("bytes", "files"), or is "".
func (q held) over(h held) string {
	switch {
	case h.bytes > q.bytes:
		return "bytes"
	case h.files > q.files:
		return "files"
	}
	return ""
}

// dirHeld counts what dir holds: its entries of every kind, and, with
// bytes, the bytes of its regular files (one lstat each: counting files
// alone reads the directories only).
func dirHeld(dir string, bytes bool) held {
	var n held
	// What cannot be read is not counted: the quota is checked again on
	// what comes in.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		n.files++
		if bytes && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n.bytes += fi.Size()
			}
		}
		return nil
	})
	return n
}

// applyRun brings a run's changes into the workspace, through the worker's
// view (guard, deny list, quotas), and returns what was refused. A path
// another tool changed during the run keeps that change.
func (s *Session) applyRun(start *memfs.Snapshot, changes []sandbox.Change) []memfs.Refused {
	var refused []memfs.Refused
	refuse := func(p string, err error) { refused = append(refused, memfs.Refused{Path: p, Err: err}) }
	now := s.ws.Snapshot()
	movedMeanwhile := func(p string) bool {
		a, aok := start.Lookup(p)
		b, bok := now.Lookup(p)
		return aok != bok || aok && !a.Same(b)
	}
	skipUnder := ""
	for _, c := range changes {
		if skipUnder != "" && strings.HasPrefix(c.Path, skipUnder+"/") {
			continue
		}
		skipUnder = ""
		if c.Other != "" {
			refuse(c.Path, fmt.Errorf("the run made %s here, which the workspace cannot hold", c.Other))
			continue
		}
		if c.Kind != sandbox.MadeDir && c.Kind != sandbox.Replaced && movedMeanwhile(c.Path) {
			refuse(c.Path, errors.New("changed by another tool while the command ran; that change stays, the run's is dropped"))
			continue
		}
		var err error
		switch c.Kind {
		case sandbox.Removed:
			if _, lerr := s.ws.Lstat(c.Path); lerr == nil {
				err = s.ws.RemoveAll(c.Path)
			}
		case sandbox.Replaced:
			if fi, lerr := s.ws.Lstat(c.Path); lerr == nil && !fi.IsDir() || lerr == nil && c.Kind == sandbox.Replaced {
				err = s.ws.RemoveAll(c.Path)
			}
			if err == nil {
				err = s.ws.MkdirAll(c.Path, 0o755)
			}
		case sandbox.MadeDir:
			if fi, lerr := s.ws.Lstat(c.Path); lerr == nil && !fi.IsDir() {
				err = s.ws.Remove(c.Path)
			}
			if err == nil {
				err = s.ws.MkdirAll(c.Path, 0o755)
			}
		case sandbox.Linked:
			if _, lerr := s.ws.Lstat(c.Path); lerr == nil {
				err = s.ws.RemoveAll(c.Path)
			}
			if err == nil {
				err = s.ws.Symlink(string(c.Data), c.Path)
			}
		case sandbox.Wrote:
			fi, lerr := s.ws.Lstat(c.Path)
			if lerr == nil && fi.IsDir() {
				err = s.ws.RemoveAll(c.Path)
			}
			perm := fs.FileMode(0o644)
			if c.Mode&0o111 != 0 {
				perm = 0o755
			}
			if err == nil {
				// The content was read for this: handed over, not copied.
				err = s.ws.WriteFileOwned(c.Path, c.Data, perm)
			}
			if err == nil && lerr == nil && !fi.IsDir() && fi.Mode().Perm() != perm {
				// A new file has perm already; one that was there keeps
				// its mode unless told.
				err = s.ws.Chmod(c.Path, perm)
			}
		}
		if err != nil {
			refuse(c.Path, err)
			if c.Kind == sandbox.MadeDir || c.Kind == sandbox.Replaced {
				skipUnder = c.Path
			}
		}
	}
	return refused
}

// runEffect names what the run created, modified and deleted, as
// git_status would: files and symlinks, compared with the start.
func runEffect(start, now *memfs.Snapshot, changes []sandbox.Change) (created, modified, deleted []string) {
	// A set, and each path's ancestors looked up in it: a run touching
	// a hundred thousand paths costs that, not its square.
	touched := make(map[string]bool, len(changes))
	for _, c := range changes {
		touched[c.Path] = true
	}
	under := func(p string) bool {
		for ; p != "." && p != "/" && p != ""; p = path.Dir(p) {
			if touched[p] {
				return true
			}
		}
		return false
	}
	for _, c := range start.Diff(now) {
		if !under(c.Path) {
			continue
		}
		switch c.Kind {
		case change.Create:
			created = append(created, c.Path)
		case change.Delete:
			deleted = append(deleted, c.Path)
		default:
			modified = append(modified, c.Path)
		}
	}
	sort.Strings(created)
	sort.Strings(modified)
	sort.Strings(deleted)
	return created, modified, deleted
}

// keeper keeps the first max bytes written and counts the rest.
type keeper struct {
	buf bytes.Buffer
	max int
	cut int64
	mu  sync.Mutex
}

func newKeeper(max int) *keeper { return &keeper{max: max} }

func (k *keeper) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	room := k.max - k.buf.Len()
	if room >= len(p) {
		k.buf.Write(p)
	} else {
		if room > 0 {
			k.buf.Write(p[:room])
		}
		k.cut += int64(len(p) - max(room, 0))
	}
	return len(p), nil
}

// shown is a stream as the answer shows it.
func shown(b []byte, cut int64, id, stream string) string {
	w := textcap.New(runShown)
	w.Write(b)
	hint := fmt.Sprintf("run_output id=%s stream=%s shows it all", id, stream)
	text := w.Text(hint)
	if cut > 0 && !w.Truncated() {
		text += fmt.Sprintf("[%d more bytes were not kept]", cut)
	}
	return text
}
