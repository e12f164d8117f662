package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/runcache"
	workerfile "github.com/airlock-dev/airlock/worker"
)

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// newFlags makes a flag set that prints its help to stderr.
func newFlags(name, synopsis, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\n%s\n", synopsis, about)
		if hasFlags(fs) {
			fmt.Fprintln(stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse parses args, turning --help into errHelp and mistakes into usage
// errors. No command takes arguments besides its flags: a stray one (say
// a ledger file given without --file) is a mistake to report, not to
// ignore.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return &exitError{exitUsage, err}
	}
	if fs.NArg() > 0 {
		return usageError("%s takes no arguments besides its flags, got %q; see %s --help", fs.Name(), fs.Args(), fs.Name())
	}
	return nil
}

func serve(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("airlock serve", "airlock serve [--worker FILE] [--timeout D] [--never-approve] [--auto-approve TARGET]... [--http ADDR]",
		"Runs the MCP server for one worker on stdin/stdout. It never prompts here: pushes wait for\n"+
			"a reviewer running `airlock review` in another terminal.", stderr)
	workerFile := fs.String("worker", "", "the worker file (Markdown with YAML frontmatter); default: a worker on the current directory's repository")
	timeout := fs.Duration("timeout", session.DefaultPushWait, "how long git_push waits for a reviewer before answering that the request is still pending\n"+
		"(call git_push again to keep waiting); keep it under the client's tool timeout (Codex: 300s)")
	never := fs.Bool("never-approve", false, "refuse every push (review-only mode)")
	var auto multiFlag
	fs.Var(&auto, "auto-approve", "push to this target without asking (a target name from the worker file, or an id such as local:/path); repeatable")
	httpAddr := fs.String("http", "", "serve MCP over Streamable HTTP instead of stdin/stdout, on this loopback address, e.g. 127.0.0.1:8787;\n"+
		"the endpoint is http://ADDR/mcp and every request needs the bearer token printed at start")
	runMode := fs.String("run", string(session.RunWorkspaceWrite), "what the run tool may do: workspace-write (commands write into the workspace),\n"+
		"read-only (commands see the workspace; their writes, and the file tools', are refused), danger (workspace-write\n"+
		"with the host's network), or off (no run tool)")
	danger := fs.Bool("danger", false, "the same as --run danger: commands get the host's network")
	var runRO, runEnvs multiFlag
	fs.Var(&runRO, "run-ro", "a host path commands see read-only at the same path (a Go module cache, a package cache); repeatable;\n"+
		"never the home directory, the credentials in it or airlock's own state, unless --allow-sensitive-roots (credentials only)")
	allowSensitive := fs.Bool("allow-sensitive-roots", false, "let --run-ro name the home directory or the credentials in it (~/.ssh, ~/.aws, ...)")
	fs.Var(&runEnvs, "run-env", "KEY=VALUE added to every command's environment; repeatable (commands inherit nothing else)")
	runTimeout := fs.Duration("run-timeout", session.DefaultRunTimeout, "the longest a command may run (and its default timeout)")
	runCacheSize := fs.String("run-cache-size", fmt.Sprintf("%dGiB", runcache.DefaultMaxBytes>>30), "the most the worker's cache may hold on disk (what commands write under ~/.cache: Go's build and\n"+
		"module caches, pip, npm, cargo, ...; kept between runs, sessions and restarts, see airlock cache); 0: no cache\n"+
		"kept, each session's goes with it")
	fresh := fs.Bool("new", false, "start a new session even if this worker has an unfinished one (which stays, for airlock sessions)")
	ephemeral := fs.Bool("ephemeral", false, "keep the session in memory only: nothing is saved, and a crash or exit loses it")
	resumeID := fs.String("session", "", "resume this session (see airlock sessions list)")
	retention := fs.Duration("retention", 7*24*time.Hour, "remove saved sessions whose work all left (pushed or discarded) this long after their last change")
	maxSessions := fs.Int("max-sessions", 64, "with --http: how many sessions (one per client) may be open at once")
	maxMemory := fs.String("max-memory", "8GiB", "with --http: how much all open sessions may hold together (files, objects)")
	idle := fs.Duration("session-idle", 10*time.Minute, "with --http: how long a session goes unused before it may be unloaded (saved; it resumes\n"+
		"on its token) to make room for a new client")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *danger {
		*runMode = string(session.RunDanger)
	}
	if *runMode != "off" {
		// A jail is built once to see that one can be: meanwhile the
		// start goes on.
		sandbox.Probe()
	}
	if n := btoi(*fresh) + btoi(*ephemeral) + btoi(*resumeID != ""); n > 1 {
		return usageError("--new, --ephemeral and --session exclude one another")
	}
	if *httpAddr != "" && (*fresh || *resumeID != "") {
		return usageError("--http gives every client a session of its own, and a client resumes its own with its session's token: leave out --new and --session")
	}
	maxBytes, err := bytesize.Parse(*maxMemory)
	if err != nil || maxBytes <= 0 {
		return usageError("--max-memory %s: give a size such as 8GiB", *maxMemory)
	}
	if *maxSessions < 1 {
		return usageError("--max-sessions %d: give at least 1", *maxSessions)
	}
	// What the flags say is checked before the worker's repositories are:
	// a usage error is the answer whatever the directory.
	state, err := broker.StateDir()
	if err != nil {
		return err
	}
	sockets, err := broker.SocketDir()
	if err != nil {
		return err
	}
	runOpts, err := runOptions(*runMode, runRO, runEnvs, *runTimeout, *allowSensitive, state, sockets)
	if err != nil {
		return err
	}
	cacheSize, err := parseCacheSize(*runCacheSize)
	if err != nil {
		return err
	}
	var w *workerfile.Worker
	if *workerFile != "" {
		if w, err = workerfile.Load(*workerFile); err != nil {
			return err
		}
	} else {
		cwd, _ := os.Getwd()
		w = workerfile.Default(cwd)
	}
	// A wrong path or branch is refused here, with where the file says
	// it, not at the first push.
	if err := w.Check(); err != nil {
		return err
	}
	policy := approval.Policy{Mode: approval.ModeAsk}
	if *never {
		policy.Mode = approval.ModeNever
	}
	for _, a := range auto {
		id, err := w.ResolveTargetID(a)
		if err != nil {
			return usageError("--auto-approve %s: %v", a, err)
		}
		policy.AutoApprove = append(policy.AutoApprove, id)
	}
	// A saved session resumes only under this worker and these flags.
	bind := session.BindingOf(w, session.PolicyOf(*never, policy.AutoApprove, runOpts))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ledger, err := ledger.Open(filepath.Join(state, "ledger.jsonl"))
	if err != nil {
		return err
	}
	defer ledger.Close()
	warnLedger(stderr, ledger.Path())
	gate := approval.NewGate(ledger, policy)
	broker, err := broker.Listen(gate, sockets, broker.ServerInfo{PID: os.Getpid(), Worker: w.Name, Started: time.Now()})
	if err != nil {
		return err
	}
	defer broker.Close()
	// The same line airlock review starts with: when the two differ (an
	// MCP client dropped AIRLOCK_RUNTIME_DIR or AIRLOCK_STATE_DIR), the
	// operator sees why the reviewer never hears of a push.
	fmt.Fprintf(stderr, "airlock serve: reviewers find this server in %s (ledger: %s)\n", sockets, ledger.Path())
	if runOpts != nil && cacheSize > 0 {
		cache, err := openRunCache(w, *workerFile, state, cacheSize)
		if err != nil {
			return err
		}
		if cache != nil {
			defer cache.Close()
			runOpts.Cache = cache
		}
	}
	var ln net.Listener
	if *httpAddr != "" {
		if err := loopbackOnly(*httpAddr); err != nil {
			return usageError("--http %s: %v", *httpAddr, err)
		}
		if ln, err = net.Listen("tcp", *httpAddr); err != nil {
			return err
		}
		defer ln.Close()
		if runOpts != nil {
			// A run the reviewer lets onto the network still cannot
			// drive this server.
			runOpts.DenyTCP = append(runOpts.DenyTCP, uint16(ln.Addr().(*net.TCPAddr).Port))
		}
	}
	opts := session.Options{Gate: gate, Timeout: *timeout, Run: runOpts}
	defer sandbox.Shutdown() // the warm helper waiting for the next run
	if *httpAddr != "" {
		// Over HTTP only: stdin is not read at all, so the server runs
		// under nohup, with </dev/null or in the background of a shell.
		sayRun(runOpts, stderr)
		root := ""
		if *ephemeral {
			fmt.Fprintf(stderr, "airlock serve: sessions are in memory only (--ephemeral): nothing survives their end\n")
		} else {
			root = filepath.Join(state, "sessions")
			if gone := session.Sweep(root, *retention); len(gone) > 0 {
				fmt.Fprintf(stderr, "airlock serve: removed %d finished session(s) older than %s\n", len(gone), *retention)
			}
		}
		token, tokenFile, err := newHTTPToken(sockets)
		if err != nil {
			return err
		}
		defer os.Remove(tokenFile)
		sbs := newSandboxes(w, *workerFile, opts, root, version(), token, *maxSessions, maxBytes, *idle, stderr)
		sbs.base = fmt.Sprintf("http://%s%s", ln.Addr(), mcpPath)
		sbs.bind = bind
		hs := newHTTPServer(httpHandler(sbs), headerTimeout, maxWaiting)
		go hs.Serve(ln)
		fmt.Fprintf(stderr, "airlock serve: worker %q, pushing to %s by default. Review pushes with `airlock review` in another terminal.\n",
			w.Name, w.Describe())
		fmt.Fprintf(stderr, "airlock serve: MCP over Streamable HTTP at %s\n"+
			"airlock serve: every request needs the header \"Authorization: Bearer %s\" (the token is also in %s, mode 0600)\n"+
			"airlock serve: every client gets a session of its own, with its own token (response headers Airlock-Session, Airlock-Session-Token); it comes back to it at %s/SESSION-ID\n",
			sbs.base, token, tokenFile, sbs.base)
		<-ctx.Done()
		hs.Close()
		sbs.Close()
		return nil
	}
	sess, err := openSession(ctx, w, *workerFile, bind, opts, state, *fresh, *ephemeral, *resumeID, *retention, stderr)
	if err != nil {
		return err
	}
	sayRun(runOpts, stderr)
	defer sess.Close()
	srv := gittools.NewMCPServer(sess, version())
	fmt.Fprintf(stderr, "airlock serve: worker %q, pushing to %s by default. Review pushes with `airlock review` in another terminal.\n",
		w.Name, w.Describe())
	err = srv.Run(ctx, guardedStdio(stdin, stdout, messageLimits(w), stderr))
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
		fmt.Fprintf(stderr, "airlock serve: stopped by %s; session %s changed nothing, so it is not kept.\n", why, dir.ID)
		return
	}
	fmt.Fprintf(stderr, "airlock serve: stopped by %s; session %s is saved in %s.\n"+
		"airlock serve: run airlock serve again with the same worker to resume it, or see it with `airlock sessions show %s`.\n",
		why, dir.ID, dir.Path, dir.ID)
}

// openSession starts the worker's session: the latest unfinished one
// made under bind resumed (unless fresh), the one named (if made under
// bind), or a new one; in memory only when ephemeral.
func openSession(ctx context.Context, w *workerfile.Worker, workerFile string, bind session.Binding, opts session.Options, state string,
	fresh, ephemeral bool, resumeID string, retention time.Duration, stderr io.Writer) (*session.Session, error) {
	if ephemeral {
		fmt.Fprintf(stderr, "airlock serve: the session is in memory only (--ephemeral): nothing survives its end\n")
		return session.New(ctx, w, opts)
	}
	root := filepath.Join(state, "sessions")
	if gone := session.Sweep(root, retention); len(gone) > 0 {
		fmt.Fprintf(stderr, "airlock serve: removed %d finished session(s) older than %s\n", len(gone), retention)
	}
	key, file := workerKey(w, workerFile)
	var dir *session.StateDir
	var err error
	switch {
	case resumeID != "":
		if dir, err = session.OpenStateDir(root, resumeID); err != nil {
			return nil, err
		}
		if err := dir.Claim(key, bind); err != nil {
			dir.Unlock()
			return nil, err
		}
	case !fresh:
		var others []error
		dir, others, err = session.LatestUnfinished(root, key, bind)
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
				dir.ID, dir.Path, len(rec.Changed), len(rec.Staged), len(rec.Checkpoints), len(rec.Waiting))
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
		fmt.Fprintf(stderr, "airlock serve: could not resume session %s (%s); it stays for airlock sessions, and a new one starts\n", dir.ID, termsafe.Line(err.Error()))
	}
	if dir, err = session.CreateStateDir(root, session.Meta{Worker: w.Name, WorkerKey: key, WorkerFile: file, Binding: &bind}); err != nil {
		return nil, err
	}
	opts.State = dir
	// A client that connects, looks and leaves (many start a server per
	// conversation) leaves nothing behind.
	opts.DropUnchanged = true
	sess, err := session.New(ctx, w, opts)
	if err != nil {
		dir.Unlock()
		os.RemoveAll(dir.Path)
		return nil, err
	}
	fmt.Fprintf(stderr, "airlock serve: session %s, saved in %s as it goes (--ephemeral: keep nothing)\n", dir.ID, dir.Path)
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

// httpHandler serves the sandboxes over Streamable HTTP, at /mcp (a new
// session, with the server's token) and /mcp/ID (session ID again, with
// its own token). A web page in the user's browser can reach a loopback
// port too: the SDK refuses Host headers that are not loopback (DNS
// rebinding), and cross-origin requests are refused, so no page can drive
// a sandbox or read what it pulled. Another user of the machine can reach
// a loopback port as well: every request must carry a bearer token only
// this user can read (see newHTTPToken) or that a session was given.
func httpHandler(sbs *sandboxes) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(mcpPath, sbs)
	mux.Handle(mcpPath+"/", sbs)
	return mux
}

// mcpPath is the Streamable HTTP endpoint.
const mcpPath = "/mcp"

// newHTTPToken makes a bearer token and writes it, mode 0600, to a file in
// dir (the private socket directory), for clients configured from a file.
func newHTTPToken(dir string) (token, file string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	token = hex.EncodeToString(b[:])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	// A killed server's token file stays behind: the next one removes
	// those of servers that are gone.
	stale, _ := filepath.Glob(filepath.Join(dir, "http-*.token"))
	for _, f := range stale {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(f), "http-%d.token", &pid); err == nil && pid > 0 && !broker.Alive(pid) {
			_ = os.Remove(f) // another server may have swept it first
		}
	}
	file = filepath.Join(dir, fmt.Sprintf("http-%d.token", os.Getpid()))
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return token, file, nil
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
