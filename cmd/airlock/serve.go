package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/hub"
	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/runcache"
	"github.com/airlock-dev/airlock/session/store"
	workerfile "github.com/airlock-dev/airlock/worker"
	"github.com/nats-io/nats.go"
)

// serveFlags is what airlock serve was asked.
type serveFlags struct {
	workerFile, httpAddr, runMode, runCacheSize, resumeID string
	timeout, runTimeout, retention, idle, undoWindow      time.Duration
	never, allowSensitive, fresh, ephemeral               bool
	auto, runRO, runEnvs, runAllow                        multiFlag
	protect                                               protectFlag
	maxSessions                                           int
	maxBytes, cacheSize                                   int64
	fleet                                                 fleetFlags
	move                                                  moveFlags
	trust                                                 trustFlags
}

// parseServe reads serve's flags and checks what they say alone.
func parseServe(args []string, stderr io.Writer) (*serveFlags, error) {
	f := &serveFlags{}
	fs := newFlags("airlock serve", "airlock serve [--worker FILE] [--timeout D] [--never-approve] [--auto-approve TARGET]... [--http ADDR]",
		"Runs the MCP server for one worker on stdin/stdout. It never prompts here: pushes wait for\n"+
			"a reviewer running `airlock review` in another terminal.", stderr)
	fs.StringVar(&f.workerFile, "worker", "", "the worker file (Markdown with YAML frontmatter); default: a worker on the current directory's repository")
	fs.DurationVar(&f.timeout, "timeout", session.DefaultPushWait, "how long git_push waits for a reviewer before answering that the request is still pending\n"+
		"(call git_push again to keep waiting); keep it under the client's tool timeout (Codex: 300s)")
	fs.DurationVar(&f.undoWindow, "undo-window", approval.DefaultUndoWindow, "how long a reviewer's approval waits before its push starts landing (a rejection, before the worker\n"+
		"is told), for the reviewer to undo it (u at airlock review's prompt); 0 for none; at most "+approval.MaxUndoWindow.String()+". The policy's\n"+
		"approvals (--auto-approve), picks and decisions made by a script, which have no undo, take effect at once")
	fs.BoolVar(&f.never, "never-approve", false, "refuse every push (review-only mode)")
	fs.Var(&f.protect, "protect", "a branch or pattern (release/*) whose pushes need a typed yes; repeatable; the worker file's protect: adds more")
	fs.Var(&f.auto, "auto-approve", "push to this target without asking (a target name from the worker file, or an id such as local:/path); repeatable")
	fs.StringVar(&f.httpAddr, "http", "", "serve MCP over Streamable HTTP instead of stdin/stdout, on this loopback address, e.g. 127.0.0.1:8787\n"+
		"(with --store, any address: the servers of a fleet, behind a load balancer); the endpoint is http://ADDR/mcp\n"+
		"and every request needs the bearer token printed at start")
	fs.StringVar(&f.runMode, "run", string(session.RunWorkspaceWrite), "what the run tool may do: workspace-write (commands write into the workspace),\n"+
		"read-only (commands see the workspace; their writes, and the file tools', are refused), danger (workspace-write,\n"+
		"every command with the network: the internet, never this machine, its LAN or the metadata address), or off (no run tool)")
	danger := fs.Bool("danger", false, "the same as --run danger: every command gets the network (the internet, not this machine)")
	fs.Var(&f.runAllow, "run-allow-host", "IP:PORT a command given the network reaches besides the internet (a registry on the LAN or on this\n"+
		"machine's loopback, e.g. 127.0.0.1:5000 or [::1]:5000): that address and port only; repeatable")
	fs.Var(&f.runRO, "run-ro", "a host path commands see read-only at the same path (a Go module cache, a package cache); repeatable;\n"+
		"never the home directory, the credentials in it or airlock's own state, unless --allow-sensitive-roots (credentials only)")
	fs.BoolVar(&f.allowSensitive, "allow-sensitive-roots", false, "let --run-ro name the home directory or the credentials in it (~/.ssh, ~/.aws, ...)")
	fs.Var(&f.runEnvs, "run-env", "KEY=VALUE added to every command's environment; repeatable (commands inherit nothing else)")
	fs.DurationVar(&f.runTimeout, "run-timeout", session.DefaultRunTimeout, "the longest a command may run (and its default timeout)")
	fs.StringVar(&f.runCacheSize, "run-cache-size", fmt.Sprintf("%dGiB", runcache.DefaultMaxBytes>>30), "the most the worker's cache may hold on disk (what commands write under ~/.cache: Go's build and\n"+
		"module caches, pip, npm, cargo, ...; kept between runs, sessions and restarts, see airlock cache); 0: no cache\n"+
		"kept, each session's goes with it")
	fs.BoolVar(&f.fresh, "new", false, "start a new session even if this worker has an unfinished one (which stays, for airlock sessions)")
	fs.BoolVar(&f.ephemeral, "ephemeral", false, "keep the session in memory only: nothing is saved, and a crash or exit loses it")
	fs.StringVar(&f.resumeID, "session", "", "resume this session (see airlock sessions list)")
	fs.DurationVar(&f.retention, "retention", 7*24*time.Hour, "remove saved sessions whose work all left (pushed or discarded) this long after their last change")
	fs.IntVar(&f.maxSessions, "max-sessions", 64, "with --http: how many sessions (one per client) may be open at once")
	maxMemory := fs.String("max-memory", "8GiB", "with --http: how much all open sessions may hold together (files, objects)")
	fs.DurationVar(&f.idle, "session-idle", 10*time.Minute, "with --http: how long a session goes unused before it may be unloaded (saved; it resumes\n"+
		"on its token) to make room for a new client")
	f.fleet.register(fs)
	f.move.register(fs)
	f.trust.register(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := f.fleet.check(); err != nil {
		return nil, err
	}
	if f.undoWindow < 0 || f.undoWindow > approval.MaxUndoWindow {
		return nil, usageError("--undo-window %s: give a duration from 0 (no undo) to %s, such as 5s", f.undoWindow, approval.MaxUndoWindow)
	}
	if err := f.move.check(f); err != nil {
		return nil, err
	}
	if err := f.trust.check(f.fleet.nats.Enabled()); err != nil {
		return nil, err
	}
	if *danger {
		f.runMode = string(session.RunDanger)
	}
	if f.runMode != "off" {
		// A jail is built once to see that one can be: meanwhile the
		// start goes on.
		sandbox.Probe()
	}
	if n := btoi(f.fresh) + btoi(f.ephemeral) + btoi(f.resumeID != ""); n > 1 {
		return nil, usageError("--new, --ephemeral and --session exclude one another")
	}
	if f.httpAddr != "" && (f.fresh || f.resumeID != "") {
		return nil, usageError("--http gives every client a session of its own, and a client resumes its own with its session's token: leave out --new and --session")
	}
	var err error
	if f.maxBytes, err = bytesize.Parse(*maxMemory); err != nil || f.maxBytes <= 0 {
		return nil, usageError("--max-memory %s: give a size such as 8GiB", *maxMemory)
	}
	if f.maxSessions < 1 {
		return nil, usageError("--max-sessions %d: give at least 1", f.maxSessions)
	}
	return f, nil
}

// served is what both transports serve: the worker, its policy, and the
// options every session gets.
type served struct {
	f             *serveFlags
	w             *workerfile.Worker
	bind          session.Binding
	opts          session.Options
	state, socket string
	stderr        io.Writer
	// nc is the connection to the fleet's NATS (--store); nil when this
	// machine's files keep everything.
	nc *nats.Conn
}

func serve(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	// What the flags say is checked before the worker's repositories are:
	// a usage error is the answer whatever the directory.
	sv := &served{f: f, stderr: stderr}
	if sv.state, err = broker.StateDir(); err != nil {
		return err
	}
	if sv.socket, err = broker.SocketDir(); err != nil {
		return err
	}
	runOpts, err := runOptions(f.runMode, f.runRO, f.runEnvs, f.runTimeout, f.allowSensitive, sv.state, sv.socket)
	if err != nil {
		return err
	}
	if runOpts != nil {
		if runOpts.AllowHosts, err = parseAllowHosts(f.runAllow); err != nil {
			return err
		}
	} else if len(f.runAllow) > 0 {
		return usageError("--run-allow-host is for commands, and --run off runs none: leave it out, or give --run")
	}
	if f.cacheSize, err = parseCacheSize(f.runCacheSize); err != nil {
		return err
	}
	policy, err := sv.loadWorker(runOpts)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if policy.ReviewerKeys, err = sv.trustedKeys(); err != nil {
		return err
	}
	if sv.nc, err = f.fleet.connect("airlock serve", stderr); err != nil {
		return err
	}
	if sv.nc != nil {
		defer sv.nc.Close()
		if err := f.trust.checkNATS(&f.fleet.nats, sv.nc.AuthRequired(), stderr); err != nil {
			return err
		}
	}

	ledger, closeLedger, err := sv.openGateLedger()
	if err != nil {
		return err
	}
	defer closeLedger()
	gate := approval.NewGate(ledger, policy)
	broker, err := broker.Listen(gate, sv.socket, broker.ServerInfo{PID: os.Getpid(), Worker: sv.w.Name, Started: time.Now()})
	if err != nil {
		return err
	}
	defer broker.Close()
	stopQueue, err := sv.publishReviews(gate)
	if err != nil {
		return err
	}
	defer stopQueue()
	// The same line airlock review starts with: when the two differ (an
	// MCP client dropped AIRLOCK_RUNTIME_DIR or AIRLOCK_STATE_DIR), the
	// operator sees why the reviewer never hears of a push.
	fmt.Fprintf(stderr, "airlock serve: reviewers find this server in %s (ledger: %s)\n", sv.socket, ledger.Path())
	if runOpts != nil && f.cacheSize > 0 {
		cache, err := openRunCache(sv.w, f.workerFile, sv.state, f.cacheSize)
		if err != nil {
			return err
		}
		if cache != nil {
			defer cache.Close()
			runOpts.Cache = cache
		}
	}
	sv.opts = session.Options{Gate: gate, Timeout: f.timeout, Run: runOpts, Rules: approval.Rules{Protected: f.protect}}
	if f.httpAddr != "" {
		return sv.serveHTTP(ctx)
	}
	defer sandbox.Shutdown() // the warm helper waiting for the next run
	return sv.serveStdio(ctx, stdin, stdout)
}

// loadWorker reads and checks the worker, and the policy its pushes get.
func (sv *served) loadWorker(runOpts *session.RunOptions) (approval.Policy, error) {
	f := sv.f
	var err error
	if f.workerFile != "" {
		if sv.w, err = workerfile.Load(f.workerFile); err != nil {
			return approval.Policy{}, err
		}
	} else {
		cwd, _ := os.Getwd()
		sv.w = workerfile.Default(cwd)
	}
	// A wrong path or branch is refused here, with where the file says
	// it, not at the first push.
	if err := sv.w.Check(); err != nil {
		return approval.Policy{}, err
	}
	policy := approval.Policy{Mode: approval.ModeAsk, UndoWindow: f.undoWindow}
	if f.never {
		policy.Mode = approval.ModeNever
	}
	for _, a := range f.auto {
		id, err := sv.w.ResolveTargetID(a)
		if err != nil {
			return approval.Policy{}, usageError("--auto-approve %s: %v", a, err)
		}
		policy.AutoApprove = append(policy.AutoApprove, id)
	}
	// A saved session resumes only under this worker and these flags.
	sv.bind = session.BindingOf(sv.w, session.PolicyOf(f.never, policy.AutoApprove, runOpts))
	return policy, nil
}

// serveStdio serves one session over stdin and stdout until the client
// closes stdin or a signal comes.
func (sv *served) serveStdio(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	f, stderr := sv.f, sv.stderr
	st, err := sv.sessionStore(stdioOwner())
	if err != nil {
		return err
	}
	if !f.ephemeral {
		key, _ := workerKey(sv.w, f.workerFile)
		breakDeadHolders(st, key, stderr)
	}
	sess, err := openSession(ctx, sv.w, f.workerFile, sv.bind, sv.opts, st, f.fresh, f.ephemeral, f.resumeID, f.retention, stderr)
	if err != nil {
		return err
	}
	sayRun(sv.opts.Run, stderr)
	defer sess.Close()
	srv := gittools.NewMCPServer(sess, version())
	fmt.Fprintf(stderr, "airlock serve: worker %q, pushing to %s by default. Review pushes with `airlock review` in another terminal.\n",
		sv.w.Name, sv.w.Describe())
	err = srv.Run(ctx, guardedStdio(stdin, stdout, messageLimits(sv.w), stderr))
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return err
	}
	why := "the client closed stdin"
	if ctx.Err() != nil {
		why = "a signal"
	}
	sayKept(sess, why, stderr)
	return nil
}

// serveHTTP serves a session per client over Streamable HTTP until a
// signal comes. Stdin is not read at all, so the server runs under nohup,
// with </dev/null or in the background of a shell.
func (sv *served) serveHTTP(ctx context.Context) error {
	f, stderr, runOpts := sv.f, sv.stderr, sv.opts.Run
	if err := sv.httpDoor(); err != nil {
		return usageError("--http %s: %v", f.httpAddr, err)
	}
	ln, err := net.Listen("tcp", f.httpAddr)
	if err != nil {
		return err
	}
	defer ln.Close()
	defer sandbox.Shutdown() // the warm helper waiting for the next run
	sayRun(runOpts, stderr)
	var st store.Store
	if f.ephemeral {
		fmt.Fprintf(stderr, "airlock serve: sessions are in memory only (--ephemeral): nothing survives their end\n")
	} else {
		if st, err = sv.sessionStore(sv.advertised(ln)); err != nil {
			return err
		}
		if gone := session.Sweep(st, f.retention); len(gone) > 0 {
			fmt.Fprintf(stderr, "airlock serve: removed %d finished session(s) older than %s\n", len(gone), f.retention)
		}
	}
	token, err := sv.serverToken(st)
	if err != nil {
		return err
	}
	tokenFile, err := writeHTTPToken(sv.socket, token)
	if err != nil {
		return err
	}
	defer os.Remove(tokenFile)
	key, file := workerKey(sv.w, f.workerFile)
	lim := messageLimits(sv.w)
	base := fmt.Sprintf("http://%s%s", ln.Addr(), hub.Path)
	h := hub.New(hub.Config{Worker: sv.w, WorkerKey: key, WorkerFile: file, Options: sv.opts, Store: st, Advertise: sv.advertised(ln), Version: version(),
		Token: token, MaxLive: f.maxSessions, MaxBytes: f.maxBytes, Idle: f.idle, Base: base, Binding: sv.bind,
		Limits: lim, SDKBodyMax: int64(sdkLineLength(lim)), Log: stderr})
	hs := newHTTPServer(h.Handler(), headerTimeout, maxWaiting)
	go hs.Serve(ln)
	fmt.Fprintf(stderr, "airlock serve: worker %q, pushing to %s by default. Review pushes with `airlock review` in another terminal.\n",
		sv.w.Name, sv.w.Describe())
	fmt.Fprintf(stderr, "airlock serve: MCP over Streamable HTTP at %s\n"+
		"airlock serve: every request needs the header \"Authorization: Bearer %s\" (the token is also in %s, mode 0600)\n"+
		"airlock serve: every client gets a session of its own, with its own token (response headers Airlock-Session, Airlock-Session-Token); it comes back to it at %s/SESSION-ID\n",
		base, token, tokenFile, base)
	<-ctx.Done()
	hs.Close()
	h.Close()
	return nil
}

// sayRun tells the operator whether commands run, and if not why: never an
// unsandboxed run, the tool is left out instead. The sandbox's probe runs
// in the background (the start does not wait for it), so this says it
// when the probe answers.
func sayRun(runOpts *session.RunOptions, stderr io.Writer) {
	if runOpts == nil {
		fmt.Fprintf(stderr, "airlock serve: the run tool is off (--run off)\n")
		return
	}
	go sayProbed(runOpts, stderr)
}

func sayProbed(runOpts *session.RunOptions, stderr io.Writer) {
	switch err := sandbox.Available(); {
	case runOpts == nil:
		fmt.Fprintf(stderr, "airlock serve: the run tool is off (--run off)\n")
	case err != nil:
		fmt.Fprintf(stderr, "airlock serve: the run tool is off: %v\n", err)
	default:
		fmt.Fprintf(stderr, "airlock serve: commands run in a sandbox (%s)\n", runOpts.Mode)
		fmt.Fprintf(stderr, "airlock serve: %s\n", sandbox.Budget(runOpts.Limits))
		if err := sandbox.NetworkStack(); err != nil {
			fmt.Fprintf(stderr, "airlock serve: a command given the network will fail: %v\n", err)
		} else if len(runOpts.AllowHosts) > 0 {
			fmt.Fprintf(stderr, "airlock serve: a command given the network reaches the internet and %s, nothing else of this machine or its network\n", joinPairs(runOpts.AllowHosts))
		}
		if c := runOpts.Cache; c != nil {
			fmt.Fprintf(stderr, "airlock serve: their caches (~/.cache) are kept for this worker in %s, up to %s (airlock cache show %s)\n",
				c.Dir(), bytesize.Format(c.Max()), c.Meta().ID)
		}
	}
}

// openRunCache opens the worker's cache under the state directory, bounded
// by size; nil for a size of 0.
func openRunCache(w *workerfile.Worker, workerFile, state string, max int64) (*runcache.Cache, error) {
	key, file := workerKey(w, workerFile)
	return runcache.Open(filepath.Join(state, "cache"), runcache.Meta{Worker: w.Name, WorkerKey: key, WorkerFile: file}, max)
}

// parseCacheSize is --run-cache-size in bytes; 0 keeps no cache.
func parseCacheSize(size string) (int64, error) {
	if s := strings.TrimSpace(size); s == "0" || s == "off" {
		return 0, nil
	}
	max, err := bytesize.Parse(size)
	if err != nil {
		return 0, usageError("--run-cache-size %s: %v; or 0 to keep no cache", size, err)
	}
	return max, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sayKept closes a durable session and tells the operator where its work
// is and how to take it up again.
func sayKept(sess *session.Session, why string, stderr io.Writer) {
	dir, ok := sess.Durable()
	sess.Close()
	if !ok {
		return
	}
	if sess.Dropped() {
		fmt.Fprintf(stderr, "airlock serve: stopped by %s; session %s changed nothing, so it is not kept.\n", why, dir.SessionID())
		return
	}
	fmt.Fprintf(stderr, "airlock serve: stopped by %s; session %s is saved in %s.\n"+
		"airlock serve: run airlock serve again with the same worker to resume it, or see it with `airlock sessions show %s`.\n",
		why, dir.SessionID(), dir.Where(), dir.SessionID())
}

// openSession starts the worker's session: the latest unfinished one
// made under bind resumed (unless fresh), the one named (if made under
// bind), or a new one; in memory only when ephemeral.
func openSession(ctx context.Context, w *workerfile.Worker, workerFile string, bind session.Binding, opts session.Options, st store.Store,
	fresh, ephemeral bool, resumeID string, retention time.Duration, stderr io.Writer) (*session.Session, error) {
	if ephemeral {
		fmt.Fprintf(stderr, "airlock serve: the session is in memory only (--ephemeral): nothing survives its end\n")
		return session.New(ctx, w, opts)
	}
	if gone := session.Sweep(st, retention); len(gone) > 0 {
		fmt.Fprintf(stderr, "airlock serve: removed %d finished session(s) older than %s\n", len(gone), retention)
	}
	key, file := workerKey(w, workerFile)
	var dir store.Lease
	var err error
	switch {
	case resumeID != "":
		if dir, err = st.Open(resumeID); err != nil {
			return nil, err
		}
		if err := store.Claim(dir, key, bind); err != nil {
			dir.Unlock()
			return nil, err
		}
	case !fresh:
		var others []error
		dir, others, err = session.LatestUnfinished(st, key, bind)
		for _, o := range others {
			// Kept for the server they belong to; the operator learns
			// where their work is.
			fmt.Fprintf(stderr, "airlock serve: not resuming: %s\n", termsafe.Line(o.Error()))
		}
		if err != nil {
			return nil, err
		}
	}
	if dir != nil {
		opts.State = dir
		sess, rec, err := session.Resume(ctx, w, opts)
		if err == nil {
			fmt.Fprintf(stderr, "airlock serve: resumed session %s from %s: %d file(s) changed, %d staged commit(s), %d checkpoint(s), %d push(es) waiting for review\n",
				dir.SessionID(), dir.Where(), len(rec.Changed), len(rec.Staged), len(rec.Checkpoints), len(rec.Waiting))
			for _, e := range rec.Ended {
				// Outcomes and errors carry git's and the target's words.
				fmt.Fprintf(stderr, "airlock serve: %s\n", termsafe.Line(e))
			}
			return sess, nil
		}
		dir.Unlock()
		if resumeID != "" {
			return nil, err
		}
		fmt.Fprintf(stderr, "airlock serve: could not resume session %s (%s); it stays for airlock sessions, and a new one starts\n", dir.SessionID(), termsafe.Line(err.Error()))
	}
	if dir, err = st.Create(session.Meta{Worker: w.Name, WorkerKey: key, WorkerFile: file, Binding: &bind}); err != nil {
		return nil, err
	}
	opts.State = dir
	// A client that connects, looks and leaves (many start a server per
	// conversation) leaves nothing behind.
	opts.DropUnchanged = true
	sess, err := session.New(ctx, w, opts)
	if err != nil {
		_ = dir.Remove() // it never held anything; a sweep removes what is left
		dir.Unlock()
		return nil, err
	}
	fmt.Fprintf(stderr, "airlock serve: session %s, saved in %s as it goes (--ephemeral: keep nothing)\n", dir.SessionID(), dir.Where())
	return sess, nil
}

// workerKey names the worker whose sessions resume one another: its file,
// or for the default worker the repository it works on.
func workerKey(w *workerfile.Worker, workerFile string) (key, file string) {
	if workerFile == "" {
		return "default:" + w.DefaultTarget.ID(), ""
	}
	abs, err := filepath.Abs(workerFile)
	if err != nil {
		abs = workerFile
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	return "file:" + abs, abs
}

// loopbackOnly refuses an address other machines could reach: the MCP
// server has no authentication of its own.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errors.New("only a loopback address (127.0.0.1, ::1, localhost) may be used: a bearer token is no substitute for keeping the sandbox off the network")
	}
	return nil
}

// runOptions turns serve's run flags into the session's options; nil for
// --run off.
func runOptions(mode string, ro, env []string, timeout time.Duration, allowSensitive bool, own ...string) (*session.RunOptions, error) {
	switch session.RunMode(mode) {
	case session.RunWorkspaceWrite, session.RunReadOnly, session.RunDanger:
	case "off":
		return nil, nil
	default:
		return nil, usageError("--run %s: give workspace-write, read-only, danger or off", mode)
	}
	opts := &session.RunOptions{Mode: session.RunMode(mode), MaxTimeout: timeout}
	if timeout <= 0 {
		return nil, usageError("--run-timeout %s: give a positive duration, such as 10m", timeout)
	}
	home := ""
	if !allowSensitive {
		home, _ = os.UserHomeDir()
	}
	for _, p := range ro {
		real, err := sandbox.CheckReadOnly(p, home, own...)
		if err != nil {
			return nil, usageError("--run-ro %s: %v", p, err)
		}
		if err := sandbox.CheckReachable(real); err != nil {
			return nil, usageError("--run-ro %s: %v", p, err)
		}
		opts.ReadOnly = append(opts.ReadOnly, real)
	}
	for _, e := range env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t\n") {
			return nil, usageError("--run-env %q: give KEY=VALUE", e)
		}
		opts.Env = append(opts.Env, e)
	}
	return opts, nil
}
