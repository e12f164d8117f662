//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/session"
	workerfile "github.com/airlock-dev/airlock/worker"
)

// The crash test: a durable session, served by the real airlock binary
// over stdio, runs a scripted workload (writes, edits, moves, deletes,
// checkpoints, rollbacks, stages, discards, pushes) and is killed with
// SIGKILL at random points, before, during and after calls; each restart
// resumes it. A reference session in memory gets the same calls, but only
// those the durable server answered. After every restart the durable
// session must be the reference exactly (every answered call's effect is
// there), or the reference plus the call in flight at the kill, whole (no
// half-applied call is visible). The ledger verifies after every restart;
// every push it records as pushed is on the branch, every one it records
// as failed is not, and none is left landing. A separate test kills a
// server with a push waiting for a reviewer and approves it after the
// restart.
//
// It kills 12 times by default, which keeps the README's test command
// within Go's default timeout on two cores; AIRLOCK_LONG_TESTS (set by CI
// in a step of its own) makes it 220. AIRLOCK_CRASH_SEED repeats a run.

// crashKills is how many times the workload is killed.
func crashKills() int {
	switch {
	case os.Getenv("AIRLOCK_LONG_TESTS") != "":
		return 220
	case testing.Short():
		return 4
	}
	return 12
}

func crashSeed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("AIRLOCK_CRASH_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("AIRLOCK_CRASH_SEED=%q: %v", s, err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// crashWorkerText is the worker file: a bare repository's main branch,
// pulled whole.
func crashWorkerText(bare string) string {
	return fmt.Sprintf(`---
name: crash-worker
description: A scripted workload, killed at random points
author:
  name: Crash Worker
  email: crash-worker@example.com
git:
  default_target:
    type: local-bare
    path: %q
    branch: main
  auto_pull:
    - path: "."
---
You write files and push them.
`, bare)
}

// crashServer is one run of airlock serve, and its worker's MCP session.
type crashServer struct {
	cmd          *exec.Cmd
	cs           *mcp.ClientSession
	stderr       *lockedBuffer
	id           string // the session it serves
	resumed      bool
	instructions string
}

func (s *crashServer) call(name string, args map[string]any) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	return resultText(res), res.IsError, nil
}

// crashRef is the reference: a session in memory, on a copy of the target.
type crashRef struct {
	s    *session.Session
	w    *workerfile.Worker
	gate *approval.Gate
}

func (r *crashRef) call(name string, args map[string]any) (string, bool) {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	out, err := gittools.Call(context.Background(), r.s, name, raw, nil)
	if err != nil {
		return err.Error(), true
	}
	return out, false
}

// crashOp is one call of the workload. Commit ids differ between the two
// sessions (their commits are made at different times), so an argument
// naming a staged commit names it by its place in the staged list, and
// each session's own id is put in.
type crashOp struct {
	name   string
	args   map[string]any
	commit int // >= 0: commit_id is the staged commit at this index
}

func (op crashOp) String() string {
	args := map[string]any{}
	for k, v := range op.args {
		if s, ok := v.(string); ok && len(s) > 60 {
			v = fmt.Sprintf("%.40q... (%d bytes)", s, len(s))
		}
		args[k] = v
	}
	if op.commit >= 0 {
		args["commit_id"] = fmt.Sprintf("<staged #%d>", op.commit)
	}
	b, _ := json.Marshal(args)
	return op.name + " " + string(b)
}

// crashStats counts what the kills hit.
type crashStats struct {
	kills, idle, answered, applied, notApplied int
	pushKills, pushApplied                     int
	landedCut, failedCut, reoffered            int
	newSessions, compared, lockHeld            int
	byOp                                       map[string]int
}

type crashRig struct {
	t                         *testing.T
	rng                       *rand.Rand
	bin, root, workerFile     string
	bare, refBare, ledgerPath string
	env                       []string
	auto                      bool
	timeout                   string // airlock serve --timeout: how long git_push waits for a reviewer

	srv       *crashServer
	ref       *crashRef
	refLedger *ledger.Ledger
	sessionID string

	token   int
	est     map[string]time.Duration // how long each tool takes, answered
	history []string                 // the last calls, for a failure's report
	checked uint64                   // ledger records checked so far
	stats   crashStats
}

// newCrashRig makes the target (a bare repository with a few files on
// main), its copy for the reference, the worker file, and the reference.
func newCrashRig(t *testing.T, seed uint64, auto bool) *crashRig {
	t.Helper()
	requireGit(t)
	r := &crashRig{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), bin: airlockBinary(t),
		root: t.TempDir(), auto: auto, timeout: "300ms", est: map[string]time.Duration{}, stats: crashStats{byOp: map[string]int{}}}
	r.env = isolatedEnv(t, r.root)
	src := filepath.Join(r.root, "src")
	files := map[string]string{
		"README.md":       "# Crash\n\nline readme t0\n",
		"src/main.go":     "package main\n\nfunc main() {}\n",
		"src/lib/f0.txt":  "line lib t1\nline lib t2\n",
		"docs/guide.md":   "line guide t3\nline guide t4\nline guide t5\n",
		"deep/a/b/f1.txt": "line deep t6\n",
	}
	r.token = 10
	initRepo(t, r.env, src, files)
	r.bare = filepath.Join(r.root, "target.git")
	r.refBare = filepath.Join(r.root, "reference.git")
	mustGit(t, r.env, r.root, "clone", "-q", "--bare", src, r.bare)
	mustGit(t, r.env, r.root, "clone", "-q", "--bare", src, r.refBare)
	r.workerFile = filepath.Join(r.root, "worker.md")
	if err := os.WriteFile(r.workerFile, []byte(crashWorkerText(r.bare)), 0o644); err != nil {
		t.Fatal(err)
	}
	r.ledgerPath = filepath.Join(r.root, "state", "airlock", "ledger.jsonl")

	w, err := workerfile.Parse(filepath.Join(r.root, "reference.md"), []byte(crashWorkerText(r.refBare)))
	if err != nil {
		t.Fatal(err)
	}
	if r.refLedger, err = ledger.Open(filepath.Join(r.root, "reference-ledger.jsonl")); err != nil {
		t.Fatal(err)
	}
	gate := approval.NewGate(r.refLedger, approval.Policy{Mode: approval.ModeAsk, AutoApprove: []string{w.DefaultTarget.ID()}})
	r.ref = &crashRef{w: w, gate: gate}
	r.ref.s = r.newRefSession()
	t.Cleanup(func() {
		if r.srv != nil {
			r.srv.cmd.Process.Kill()
			r.srv.cs.Close()
		}
		r.ref.s.Close()
		r.refLedger.Close()
	})
	return r
}

// newRefSession starts a reference session afresh, as airlock serve
// starts a new one: auto_pull of the target as it is now.
func (r *crashRig) newRefSession() *session.Session {
	r.t.Helper()
	s, err := session.New(context.Background(), r.ref.w, session.Options{Gate: r.ref.gate, Timeout: 30 * time.Second})
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

var crashSessionLine = regexp.MustCompile(`airlock serve: (resumed )?session (\d{8}-\d{6}-[0-9a-f]{8})`)

// start runs airlock serve and connects to it as the worker.
func (r *crashRig) start() {
	r.t.Helper()
	args := []string{"serve", "--worker", r.workerFile, "--run", "off", "--timeout", r.timeout}
	if r.auto {
		args = append(args, "--auto-approve", "default")
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Env, cmd.Dir = r.env, r.root
	srv := &crashServer{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = srv.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "airlock-crash", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		r.fail("connecting to airlock serve: %v\nits stderr:\n%s", err, srv.stderr.String())
	}
	srv.cs = cs
	r.srv = srv
	if ir := cs.InitializeResult(); ir != nil {
		srv.instructions = ir.Instructions
	}
	// The session line comes before the server answers; its stderr may
	// still be on its way here.
	for deadline := time.Now().Add(10 * time.Second); ; {
		out := srv.stderr.String()
		if strings.Contains(out, "could not resume") {
			r.fail("airlock serve could not resume the session:\n%s", out)
		}
		if m := crashSessionLine.FindStringSubmatch(out); m != nil {
			srv.resumed, srv.id = m[1] != "", m[2]
			break
		}
		if time.Now().After(deadline) {
			r.fail("airlock serve never said which session it serves:\n%s", out)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// kill ends the server with SIGKILL and reaps it.
func (r *crashRig) kill() {
	r.srv.cmd.Process.Signal(syscall.SIGKILL)
	r.srv.cs.Close() // waits for the process
	r.srv = nil
	// The dead server's session is free at once: nothing it started
	// holds its lock.
	if r.sessionID != "" {
		f, err := os.Open(filepath.Join(r.root, "state", "airlock", "sessions", r.sessionID, "lock"))
		if err == nil {
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				r.stats.lockHeld++
				r.t.Logf("the killed server's session is still locked; held by: %s", crashHolders(f.Name()))
			}
			f.Close()
		}
	}
}

func (r *crashRig) fail(format string, args ...any) {
	r.t.Helper()
	msg := fmt.Sprintf(format, args...)
	if len(r.history) > 0 {
		msg += "\nthe last calls (oldest first):\n  " + strings.Join(r.history, "\n  ")
	}
	if r.srv != nil {
		msg += "\nairlock serve's stderr:\n" + r.srv.stderr.String()
	}
	r.t.Fatal(msg)
}

func (r *crashRig) note(s string) {
	r.history = append(r.history, s)
	if len(r.history) > 30 {
		r.history = r.history[1:]
	}
}

func (r *crashRig) nextToken() string {
	r.token++
	return fmt.Sprintf("t%d", r.token)
}

// refFiles lists the reference's files and directories.
func (r *crashRig) refFiles() (files, dirs []string) {
	fs.WalkDir(r.ref.s.Workspace().FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || p == ".":
		case d.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
		return nil
	})
	return files, dirs
}

var crashDirs = []string{"", "src/", "src/lib/", "docs/", "deep/a/b/", "new/"}
var crashNames = []string{"f0.txt", "f1.txt", "f2.txt", "notes.md", "README.md"}
var crashWords = []string{"alpha", "gamma", "kilo", "lima", "oscar", "quartz", "sierra", "tango", "victor", "zulu"}

func crashPick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func (r *crashRig) randomPath() string {
	return crashPick(r.rng, crashDirs) + crashPick(r.rng, crashNames)
}

// content is a few lines, each unique (edits find exactly one), or now and
// then one long line, which journal writes and restarts must carry too.
func (r *crashRig) content() string {
	if r.rng.IntN(40) == 0 {
		n := 64<<10 + r.rng.IntN(448<<10)
		b := make([]byte, n, n+1)
		for i := range b {
			b[i] = "ghijklmnopqrsuvwxyz"[r.rng.IntN(19)]
		}
		return string(append(b, '\n'))
	}
	var b strings.Builder
	for i := r.rng.IntN(10); i >= 0; i-- {
		fmt.Fprintf(&b, "line %s %s\n", crashPick(r.rng, crashWords), r.nextToken())
	}
	return b.String()
}

// randomOp picks a call that fits the state both sessions are in (the
// reference's, which the durable one equals); kinds, when given, are the
// ones to choose from.
func (r *crashRig) randomOp(kinds ...string) crashOp {
	files, dirs := r.refFiles()
	st := r.ref.s.Status()
	cps := r.ref.s.Checkpoints()
	if len(kinds) == 0 {
		kinds = []string{}
		for kind, weight := range map[string]int{
			"write_file": 18, "edit_file": 14, "delete_file": 6, "move_file": 6, "checkpoint": 7, "rollback": 6,
			"git_stage": 10, "git_discard": 4, "git_push": 8, "git_status": 2, "list_checkpoints": 2, "read_file": 2,
			"list_files": 1, "git_diff": 2, "git_pull": 1,
		} {
			for range weight {
				kinds = append(kinds, kind)
			}
		}
		sort.Strings(kinds) // the map's order is random; the seed's must not be
	}
	op := crashOp{name: crashPick(r.rng, kinds), commit: -1}
	staged := len(st.Staged)
	commitIndex := func() int {
		if staged == 0 || r.rng.IntN(2) == 0 {
			return -1
		}
		return r.rng.IntN(staged)
	}
	switch op.name {
	case "write_file":
		p := r.randomPath()
		if len(files) > 0 && r.rng.IntN(3) == 0 {
			p = crashPick(r.rng, files)
		}
		op.args = map[string]any{"path": p, "content": r.content()}
	case "edit_file":
		if len(files) == 0 {
			return r.randomOp("write_file")
		}
		p := crashPick(r.rng, files)
		data, _ := r.ref.s.Workspace().ReadFile(p)
		lines := strings.SplitAfter(string(data), "\n")
		var usable []string
		for _, l := range lines {
			if l = strings.TrimSuffix(l, "\n"); l != "" && len(l) < 1000 && strings.Count(string(data), l) == 1 {
				usable = append(usable, l)
			}
		}
		switch {
		case len(usable) == 0 || r.rng.IntN(20) == 0:
			// Text that is not there: refused, on both sides alike.
			op.args = map[string]any{"path": p, "old_text": "no such text " + r.nextToken(), "new_text": "x"}
		case len(usable) >= 2 && r.rng.IntN(4) == 0:
			i := r.rng.IntN(len(usable))
			j := (i + 1 + r.rng.IntN(len(usable)-1)) % len(usable)
			op.args = map[string]any{"path": p, "edits": []map[string]string{
				{"oldText": usable[i], "newText": "line edited " + r.nextToken()},
				{"oldText": usable[j], "newText": "line edited " + r.nextToken() + "\nline added " + r.nextToken()},
			}}
		default:
			op.args = map[string]any{"path": p, "old_text": crashPick(r.rng, usable), "new_text": "line edited " + r.nextToken()}
		}
	case "delete_file":
		switch {
		case len(dirs) > 0 && r.rng.IntN(4) == 0:
			op.args = map[string]any{"path": crashPick(r.rng, dirs), "recursive": true}
		case len(files) > 0:
			op.args = map[string]any{"path": crashPick(r.rng, files)}
		default:
			return r.randomOp("write_file")
		}
	case "move_file":
		switch {
		case len(dirs) > 0 && r.rng.IntN(5) == 0:
			op.args = map[string]any{"source": crashPick(r.rng, dirs), "destination": "moved-" + r.nextToken()}
		case len(files) > 0:
			op.args = map[string]any{"source": crashPick(r.rng, files), "destination": r.randomPath()}
		default:
			return r.randomOp("write_file")
		}
	case "checkpoint":
		op.args = map[string]any{}
		if r.rng.IntN(2) == 0 {
			op.args["name"] = "cp-" + r.nextToken()
		}
	case "rollback":
		op.args = map[string]any{}
		if len(cps) > 0 && r.rng.IntN(3) > 0 {
			op.args["name"] = crashPick(r.rng, cps).Name
		}
	case "git_stage":
		op.args = map[string]any{"message": "Commit " + r.nextToken()}
		if r.rng.IntN(3) == 0 {
			op.args["message"] = op.args["message"].(string) + "\n\nWith a body, " + r.nextToken() + "."
		}
		if len(st.Unstaged) > 0 && r.rng.IntN(3) == 0 {
			op.args["files"] = []string{crashPick(r.rng, st.Unstaged).Path}
		}
	case "git_discard":
		if op.commit = commitIndex(); op.commit < 0 {
			op.args = map[string]any{"all": true}
		}
	case "git_push":
		op.commit = commitIndex()
	case "read_file":
		if len(files) == 0 {
			return r.randomOp("write_file")
		}
		op.args = map[string]any{"path": crashPick(r.rng, files)}
	case "list_files":
		op.args = map[string]any{"recursive": true}
	case "git_diff":
		op.commit = commitIndex()
	}
	return op
}

var crashStagedLine = regexp.MustCompile(`(?m)^  ([0-9a-f]{7}) "`)

// stagedIDs reads the staged commits' ids from git_status.
func crashStagedIDs(status string) []string {
	var ids []string
	for _, m := range crashStagedLine.FindAllStringSubmatch(status, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// argsFor puts the side's own commit id in op's arguments.
func crashArgsFor(op crashOp, status func() string) map[string]any {
	args := map[string]any{}
	for k, v := range op.args {
		args[k] = v
	}
	if op.commit >= 0 {
		ids := crashStagedIDs(status())
		args["commit_id"] = "0000000" // no such commit: refused on both sides
		if op.commit < len(ids) {
			args["commit_id"] = ids[op.commit]
		}
	}
	return args
}

func (r *crashRig) durableStatus() string {
	out, _, err := r.srv.call("git_status", nil)
	if err != nil {
		r.fail("git_status: %v", err)
	}
	return out
}

func (r *crashRig) refStatus() string {
	out, _ := r.ref.call("git_status", nil)
	return out
}

// applyRef makes op's call on the reference.
func (r *crashRig) applyRef(op crashOp) (string, bool) {
	return r.ref.call(op.name, crashArgsFor(op, r.refStatus))
}

var (
	crashHex  = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	crashTime = regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`)
)

// normal is text with what differs between the two sessions for no fault
// of theirs taken out: commit ids, times of day, and where the targets
// are.
func (r *crashRig) normal(s string) string {
	s = strings.ReplaceAll(s, r.bare, "<target>")
	s = strings.ReplaceAll(s, r.refBare, "<target>")
	s = crashHex.ReplaceAllString(s, "<id>")
	return crashTime.ReplaceAllString(s, "<time>")
}

// step makes one call on both sessions, with no kill, and checks that
// they answer alike.
func (r *crashRig) step(op crashOp) {
	r.t.Helper()
	args := crashArgsFor(op, r.durableStatus)
	start := time.Now()
	out, isErr, err := r.srv.call(op.name, args)
	if err != nil {
		r.fail("%s: protocol error: %v", op, err)
	}
	r.learn(op.name, time.Since(start))
	r.note(op.String())
	refOut, refErr := r.applyRef(op)
	if isErr != refErr || r.normal(out) != r.normal(refOut) {
		r.fail("%s: the durable session answered (error %v)\n%s\nthe reference (error %v)\n%s", op, isErr, out, refErr, refOut)
	}
}

// learn keeps how long a tool takes, to spread the kills over its calls.
func (r *crashRig) learn(name string, d time.Duration) {
	if old, ok := r.est[name]; ok {
		d = (3*old + d) / 4
	}
	r.est[name] = d
}

func (r *crashRig) estimate(name string) time.Duration {
	if d, ok := r.est[name]; ok {
		return d
	}
	if name == "git_push" {
		return 40 * time.Millisecond
	}
	return 2 * time.Millisecond
}

// state is everything the worker can observe of a session, and the
// history of its target, with commit ids and times taken out: the files
// (every one read), git_status, each staged commit's diff, the
// checkpoints.
func (r *crashRig) state(call func(name string, args map[string]any) string, target string) []string {
	var out []string
	listing := call("list_files", map[string]any{"recursive": true})
	for _, line := range strings.Split(listing, "\n") {
		out = append(out, "list "+line)
		if strings.HasSuffix(line, "/") || strings.HasPrefix(line, "(nothing") {
			continue
		}
		p, _, _ := strings.Cut(line, " (")
		p = strings.TrimSuffix(p, "*")
		var content strings.Builder
		for start := 1; ; {
			page := call("read_file", map[string]any{"path": p, "start_line": start})
			m := crashReadOn.FindStringSubmatchIndex(page)
			if m == nil {
				content.WriteString(page)
				break
			}
			content.WriteString(page[:m[0]])
			start, _ = strconv.Atoi(page[m[2]:m[3]])
		}
		c := content.String()
		if len(c) > 300 {
			c = fmt.Sprintf("%d bytes, sha256 %x", len(c), sha256.Sum256([]byte(c)))
		}
		out = append(out, fmt.Sprintf("file %s = %q", p, c))
	}
	status := call("git_status", nil)
	for _, line := range strings.Split(r.normal(status), "\n") {
		out = append(out, "status "+line)
	}
	for i, id := range crashStagedIDs(status) {
		for _, line := range strings.Split(r.normal(call("git_diff", map[string]any{"commit_id": id})), "\n") {
			out = append(out, fmt.Sprintf("staged #%d %s", i, line))
		}
	}
	for _, line := range strings.Split(r.normal(call("list_checkpoints", nil)), "\n") {
		out = append(out, "checkpoint "+line)
	}
	// The target's history: trees (the same content is the same id on
	// both sides) and subjects.
	for _, line := range strings.Split(strings.TrimSpace(mustGit(r.t, r.env, target, "log", "--format=%T %s", "main")), "\n") {
		out = append(out, "target "+line)
	}
	return out
}

var crashReadOn = regexp.MustCompile(`\n?\[lines \d+-\d+ of \d+; read on with start_line=(\d+)\]$`)

func (r *crashRig) durableState() []string {
	return r.state(func(name string, args map[string]any) string {
		out, _, err := r.srv.call(name, args)
		if err != nil {
			r.fail("%s: protocol error while reading the state: %v", name, err)
		}
		return out
	}, r.bare)
}

func (r *crashRig) refState() []string {
	return r.state(func(name string, args map[string]any) string {
		out, _ := r.ref.call(name, args)
		return out
	}, r.refBare)
}

// crashHolders names the processes that have path open.
func crashHolders(path string) string {
	var out []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			pid := strings.Split(fd, "/")[2]
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			stat, _ := os.ReadFile("/proc/" + pid + "/stat")
			out = append(out, fmt.Sprintf("pid %s (%s) %q", pid, stat, strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	return strings.Join(out, "; ")
}

// crashDiff shows the lines only one side has.
func crashDiff(want, got []string) string {
	count := map[string]int{}
	for _, l := range want {
		count[l]++
	}
	for _, l := range got {
		count[l]--
	}
	var b strings.Builder
	n := 0
	for _, l := range want {
		if count[l] > 0 && n < 40 {
			fmt.Fprintf(&b, "  - %s\n", l)
			n++
		}
	}
	for _, l := range got {
		if count[l] < 0 && n < 40 {
			fmt.Fprintf(&b, "  + %s\n", l)
			n++
		}
	}
	if n == 0 {
		// The same lines in another order.
		return fmt.Sprintf("  (in another order)\n  reference: %q\n  durable:   %q", want, got)
	}
	return b.String()
}

func crashSameLines(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// finished reports whether the reference holds no work that has not left:
// airlock serve resumes only a session that does.
func (r *crashRig) finished() bool {
	st := r.ref.s.Status()
	return len(st.Staged) == 0 && len(st.Unstaged) == 0
}

var crashWaiting = regexp.MustCompile(`pushes waiting for a reviewer again: ([^(]+) \(`)

// settle waits until the pushes a restart offered again (which the policy
// approves at once) have ended: the durable session is then at rest.
func (r *crashRig) settle() {
	m := crashWaiting.FindStringSubmatch(r.srv.instructions)
	if m == nil {
		return
	}
	ids := strings.Split(strings.TrimSpace(m[1]), ", ")
	r.stats.reoffered += len(ids)
	if !r.auto {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for !r.ended(id) {
			if time.Now().After(deadline) {
				r.fail("the push of request %s, offered again after the restart, never ended", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// ended reports whether the ledger's last word on request id ends it.
func (r *crashRig) ended(id string) bool {
	recs, err := ledger.Records(r.ledgerPath)
	if err != nil {
		r.fail("reading the ledger: %v", err)
	}
	done := false
	for _, rec := range recs {
		var d struct{ ID, Request, Result string }
		json.Unmarshal(rec.Data, &d)
		switch {
		case rec.Kind == ledger.KindRequest && d.ID == id:
			done = false
		case rec.Kind == ledger.KindPush && d.Request == id && d.Result != "landing",
			rec.Kind == ledger.KindWithdrawal && d.Request == id:
			done = true
		case rec.Kind == ledger.KindDecision && d.Request == id:
			var dec struct{ Verdict string }
			json.Unmarshal(rec.Data, &dec)
			done = dec.Verdict == string(approval.Reject)
		}
	}
	return done
}

// checkLedger verifies the ledger's chain and holds its pushes against the
// target: every push recorded as pushed is on the branch, every one
// recorded as failed (and not pushed later) is not, and none is still
// landing.
func (r *crashRig) checkLedger() {
	r.t.Helper()
	rep, err := ledger.Verify(r.ledgerPath)
	if os.IsNotExist(err) {
		return // nothing asked yet
	}
	if err != nil || !rep.OK() {
		r.fail("the ledger does not verify: %v %+v", err, rep.Broken)
	}
	recs, err := ledger.Records(r.ledgerPath)
	if err != nil {
		r.fail("reading the ledger: %v", err)
	}
	onBranch := map[string]bool{}
	for _, h := range strings.Fields(mustGit(r.t, r.env, r.bare, "rev-list", "main")) {
		onBranch[h] = true
	}
	type push struct{ Request, New, Result, Recovered string }
	last := map[string]push{} // by request
	at := map[string]int{}    // where each request's last record is
	var pushed []string       // commits recorded as pushed, in order
	var pushedAt []int        // and where
	var order []string
	for i, rec := range recs {
		if rec.Kind != ledger.KindPush {
			continue
		}
		var p push
		if err := json.Unmarshal(rec.Data, &p); err != nil {
			r.fail("a push record: %v: %s", err, rec.Data)
		}
		if _, ok := last[p.Request]; !ok {
			order = append(order, p.Request)
		}
		last[p.Request], at[p.Request] = p, i
		if p.Result == "pushed" {
			pushed, pushedAt = append(pushed, p.New), append(pushedAt, i)
		}
		if rec.Seq > r.checked && p.Recovered != "" {
			switch p.Result {
			case "pushed":
				r.stats.landedCut++
			case "failed":
				r.stats.failedCut++
			}
		}
		if rec.Seq > r.checked {
			r.checked = rec.Seq
		}
	}
	for _, id := range order {
		p := last[id]
		switch p.Result {
		case "landing":
			r.fail("request %s (commit %s) is still landing in the ledger after the restart:\n%s", id, p.New, crashLedgerText(recs))
		case "pushed":
			if !onBranch[p.New] {
				r.fail("the ledger says request %s pushed %s, but main does not have it", id, p.New)
			}
		case "failed":
			// On the branch only if a later push carried it (itself, or a
			// commit staged on top of it).
			carried := false
			for j := len(pushed) - 1; j >= 0 && pushedAt[j] > at[id] && !carried; j-- {
				_, err := gitOut(r.t, r.env, r.bare, "merge-base", "--is-ancestor", p.New, pushed[j])
				carried = err == nil
			}
			if onBranch[p.New] && !carried {
				r.fail("the ledger says request %s failed to push %s (%s), but main has it and no later push carried it:\n%s", id, p.New, p.Recovered, crashLedgerText(recs))
			}
		}
	}
}

func crashLedgerText(recs []ledger.Record) string {
	var b strings.Builder
	for _, rec := range recs {
		if rec.Kind == ledger.KindPush || rec.Kind == ledger.KindWithdrawal {
			fmt.Fprintf(&b, "  %d %s %s\n", rec.Seq, rec.Kind, rec.Data)
		} else {
			var d struct{ ID, Request, Verdict, By, New string }
			json.Unmarshal(rec.Data, &d)
			fmt.Fprintf(&b, "  %d %s %s%s %s %s %s\n", rec.Seq, rec.Kind, d.ID, d.Request, d.Verdict, d.By, d.New)
		}
	}
	return b.String()
}

// killCycle makes op's call (none: nil) on the durable server, kills the
// server after delay, restarts it and checks what it resumed.
func (r *crashRig) killCycle(op *crashOp, delay time.Duration) {
	r.t.Helper()
	r.stats.kills++
	type answer struct {
		out   string
		isErr bool
		err   error
	}
	done := make(chan answer, 1)
	what := "no call"
	if op != nil {
		what = op.String()
		args := crashArgsFor(*op, r.durableStatus)
		go func() {
			out, isErr, err := r.srv.call(op.name, args)
			done <- answer{out, isErr, err}
		}()
		r.stats.byOp[op.name]++
	} else {
		r.stats.idle++
	}
	time.Sleep(delay)
	r.kill()
	var ans answer
	if op != nil {
		ans = <-done
	}
	answered := op != nil && ans.err == nil
	r.note(fmt.Sprintf("%s, killed after %s (answered: %v)", what, delay, answered))
	if answered {
		r.stats.answered++
		refOut, refErr := r.applyRef(*op)
		if ans.isErr != refErr || r.normal(ans.out) != r.normal(refOut) {
			r.fail("%s: the durable session answered (error %v)\n%s\nthe reference (error %v)\n%s", *op, ans.isErr, ans.out, refErr, refOut)
		}
	}
	if op != nil && op.name == "git_push" {
		r.stats.pushKills++
	}

	r.start()
	r.settle()
	got := r.durableState()
	// The durable session is the reference, or the reference with the
	// call in flight applied whole.
	if r.matches(got) {
		if op != nil && !answered {
			r.stats.notApplied++
		}
	} else if op != nil && !answered {
		wasFinished := r.finished()
		refOut, refErr := r.applyRef(*op)
		if !r.matches(got) {
			r.fail("after the kill during %s, the durable session is neither the reference nor the reference after that call (finished before: %v, after: %v; the reference answered it (error %v): %s)%s; against the latter:\n%s",
				*op, wasFinished, r.finished(), refErr, refOut, r.which(), crashDiff(r.refState(), got))
		}
		r.stats.applied++
		if op.name == "git_push" {
			r.stats.pushApplied++
		}
		r.note("  (the call in flight had been applied)")
	} else {
		r.fail("after the kill (%s), the durable session differs from the reference%s:\n%s", what, r.which(), crashDiff(r.refState(), got))
	}
	r.stats.compared++
	r.checkLedger()
}

// which says when the server did not resume the session it had.
func (r *crashRig) which() string {
	if r.srv.id == r.sessionID {
		return ""
	}
	list, _, _ := runAirlock(r.t, r.env, r.root, "sessions", "list")
	sum, _ := os.ReadFile(filepath.Join(r.root, "state", "airlock", "sessions", r.sessionID, "summary.json"))
	return fmt.Sprintf(" (airlock serve started a new session, %s, instead of resuming %s; airlock sessions list:\n%s\nthe summary of %[2]s:\n%s)", r.srv.id, r.sessionID, list, sum)
}

// matches compares the durable session's state with the reference's.
// When the server started a new session, the one before must have been
// finished, and the reference starts afresh too.
func (r *crashRig) matches(got []string) bool {
	if r.srv.id == r.sessionID {
		return crashSameLines(r.refState(), got)
	}
	if !r.finished() {
		return false
	}
	old := r.ref.s
	r.ref.s = r.newRefSession()
	if crashSameLines(r.refState(), got) {
		old.Close()
		r.sessionID = r.srv.id
		r.stats.newSessions++
		r.note("  (a new session started: the one before was finished)")
		return true
	}
	r.ref.s.Close()
	r.ref.s = old
	return false
}

// TestCrashDurableSession kills airlock serve with SIGKILL at random
// points of a scripted workload; see the top of this file.
func TestCrashDurableSession(t *testing.T) {
	seed := crashSeed(t)
	kills := crashKills()
	t.Logf("seed %d (AIRLOCK_CRASH_SEED=%d repeats it), %d kills", seed, seed, kills)
	r := newCrashRig(t, seed, true)
	begin := time.Now()
	r.start()
	if r.srv.resumed {
		t.Fatalf("the first server resumed a session:\n%s", r.srv.stderr.String())
	}
	r.sessionID = r.srv.id
	if !crashSameLines(r.refState(), r.durableState()) {
		t.Fatalf("the sessions differ from the start:\n%s", crashDiff(r.refState(), r.durableState()))
	}
	for i := 0; i < kills; i++ {
		for n := r.rng.IntN(5); n > 0; n-- {
			r.step(r.randomOp())
		}
		var op *crashOp
		switch {
		case r.rng.IntN(10) == 0:
			// A kill with no call in flight.
		case i%3 == 0:
			// Every third kill is during a push. With nothing staged,
			// the stage it needs is made first (kills during git_stage
			// come from the random ops), so every such kill hits a push
			// and the check below cannot fail by chance.
			if len(r.ref.s.Status().Staged) == 0 {
				r.step(r.randomOp("write_file"))
				r.step(crashOp{name: "git_stage", args: map[string]any{"message": "Commit " + r.nextToken()}, commit: -1})
			}
			o := r.randomOp("git_push")
			op = &o
		default:
			o := r.randomOp()
			op = &o
		}
		est := 2 * time.Millisecond
		if op != nil {
			est = r.estimate(op.name)
		}
		delay := time.Duration(r.rng.Int64N(int64(est)*3/2 + int64(300*time.Microsecond)))
		r.killCycle(op, delay)
	}
	// The last server goes on working after all those kills.
	r.step(r.randomOp("write_file"))
	r.step(crashOp{name: "git_stage", args: map[string]any{"message": "Final commit"}, commit: -1})
	r.step(crashOp{name: "git_push", commit: -1})
	if got, want := r.durableState(), r.refState(); !crashSameLines(want, got) {
		r.fail("after the last push the sessions differ:\n%s", crashDiff(want, got))
	}
	r.kill()
	r.checkLedger()
	out, errOut, code := runAirlock(t, r.env, r.root, "ledger", "verify")
	if code != 0 || !strings.Contains(out, "chain intact") {
		t.Fatalf("airlock ledger verify exited %d:\n%s%s", code, out, errOut)
	}
	s := r.stats
	t.Logf("%d kills in %s: %d with no call in flight, %d after the call answered; of the calls cut, %d had been applied whole and %d not at all",
		s.kills, time.Since(begin).Round(time.Millisecond), s.idle, s.answered, s.applied, s.notApplied)
	t.Logf("pushes: %d kills during git_push (%d of them applied without an answer); the ledger recorded %d cut pushes as pushed and %d as failed on restart; %d requests offered again",
		s.pushKills, s.pushApplied, s.landedCut, s.failedCut, s.reoffered)
	t.Logf("%d restarts resumed the session, %d started a new one (the one before was finished); calls cut by kind: %v",
		s.kills-s.newSessions, s.newSessions, s.byOp)
	if s.lockHeld > 0 {
		t.Logf("%d times the killed server's session was still locked once it was reaped", s.lockHeld)
	}
	t.Logf("typical durations of the calls, answered: %v", r.est)
	if s.pushKills == 0 {
		t.Errorf("no kill hit a push")
	}
}

// TestCrashPendingPushOfferedAgain: a push waiting for a reviewer when the
// server is killed is waiting again after the restart, under the same
// request id; a reviewer approves it and it lands. Once with the git_push
// that asked answered ("still waiting"), once with it cut by the kill.
func TestCrashPendingPushOfferedAgain(t *testing.T) {
	for _, answered := range []bool{true, false} {
		t.Run(fmt.Sprintf("answered=%v", answered), func(t *testing.T) {
			r := newCrashRig(t, 1, false)
			if !answered {
				r.timeout = "60s"
			}
			r.start()
			r.step(crashOp{name: "write_file", args: map[string]any{"path": "review/me.txt", "content": "please review\n"}, commit: -1})
			out, isErr, err := r.srv.call("git_stage", map[string]any{"message": "Ask for a review"})
			if err != nil || isErr {
				t.Fatalf("git_stage: %v %s", err, out)
			}
			commit := crashStagedIDs(r.durableStatus())[0]
			var id string
			if answered {
				out, isErr, err = r.srv.call("git_push", map[string]any{"commit_id": commit})
				if err != nil || isErr || !strings.Contains(out, "still waiting for a reviewer") {
					t.Fatalf("git_push: %v %v %s", err, isErr, out)
				}
				id = regexp.MustCompile(`\(request (req-[0-9a-f]+)\)`).FindStringSubmatch(out)[1]
			} else {
				// The git_push waits; the server dies under it, once the
				// request is in the ledger (and so before reviewers).
				go r.srv.call("git_push", map[string]any{"commit_id": commit})
				for deadline := time.Now().Add(20 * time.Second); id == ""; time.Sleep(2 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the request never reached the ledger")
					}
					recs, _ := ledger.Records(r.ledgerPath)
					for _, rec := range recs {
						var d struct{ ID string }
						if json.Unmarshal(rec.Data, &d); rec.Kind == ledger.KindRequest {
							id = d.ID
						}
					}
				}
				// The session saves the push just after the gate records
				// the request (the call has not answered, so nothing
				// obliges it sooner): kill once the journal has it.
				journals, _ := filepath.Glob(filepath.Join(r.root, "state", "airlock", "sessions", "*", "journal"))
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
					saved := false
					for _, j := range journals {
						if data, err := os.ReadFile(j); err == nil && bytes.Contains(data, []byte(id)) {
							saved = true
						}
					}
					if saved {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the push of request %s was never saved to the session's journal", id)
					}
				}
			}
			r.kill()
			r.start()
			if !r.srv.resumed {
				t.Fatalf("the restart did not resume the session:\n%s", r.srv.stderr.String())
			}
			mustContain(t, "airlock serve's stderr", r.srv.stderr.String(), "1 push(es) waiting for review")
			mustContain(t, "the worker's instructions", r.srv.instructions, "pushes waiting for a reviewer again: "+id)

			// A reviewer finds it under the same id and approves it.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rv, err := broker.Watch(ctx, filepath.Join(r.root, "run", "airlock"))
			if err != nil {
				t.Fatal(err)
			}
			defer rv.Close()
			in, err := rv.Next(ctx)
			if err != nil {
				t.Fatalf("no request reached the reviewer: %v", err)
			}
			if in.Request.ID != id || !strings.HasPrefix(in.Request.New.String(), commit) {
				t.Fatalf("the reviewer was offered %s for %s; want %s for %s", in.Request.ID, in.Request.New, id, commit)
			}
			if _, err := in.Decide(approval.Decision{Verdict: approval.Approve}); err != nil {
				t.Fatalf("approving: %v", err)
			}
			out, isErr, err = r.srv.call("git_push", map[string]any{"commit_id": commit})
			if err != nil || isErr || !strings.Contains(out, "pushed "+commit) {
				t.Fatalf("git_push after the approval: %v %v %s", err, isErr, out)
			}
			if head := mustGit(t, r.env, r.bare, "rev-parse", "main"); !strings.HasPrefix(head, commit) {
				t.Fatalf("main is at %s, want %s", head, commit)
			}
			if got := mustGit(t, r.env, r.bare, "show", "main:review/me.txt"); got != "please review\n" {
				t.Fatalf("main:review/me.txt = %q", got)
			}
			r.kill()
			r.checkLedger()
			recs, _ := ledger.Records(r.ledgerPath)
			var resumed, approved, pushed bool
			for _, rec := range recs {
				var d struct {
					ID, Request, Verdict, Result string
					Resumed                      bool
				}
				json.Unmarshal(rec.Data, &d)
				resumed = resumed || rec.Kind == ledger.KindRequest && d.ID == id && d.Resumed
				approved = approved || rec.Kind == ledger.KindDecision && d.Request == id && d.Verdict == string(approval.Approve)
				pushed = pushed || rec.Kind == ledger.KindPush && d.Request == id && d.Result == "pushed"
			}
			if !resumed || !approved || !pushed {
				t.Fatalf("the ledger lacks the resumed request (%v), its approval (%v) or its push (%v):\n%s", resumed, approved, pushed, crashLedgerText(recs))
			}
		})
	}
}
