//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	workerfile "github.com/airlock-dev/airlock/worker"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/session"
)

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
