//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/mcptest"
	"github.com/airlock-dev/airlock/internal/ptytest"
	"github.com/airlock-dev/airlock/internal/scenario"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the end-to-end tests need it")
	}
}

// isolatedEnv is the environment every process of a test runs with: its
// own home, state, runtime and temporary directories, and a git that reads
// no configuration of the machine's (the scenario suite's).
func isolatedEnv(t testing.TB, root string, extra ...string) []string {
	t.Helper()
	return scenario.Env(t, root, extra...)
}

// gitOut runs git in dir and returns its standard output.
func gitOut(t testing.TB, env []string, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// initRepo makes a repository at dir whose main branch has one commit of
// files (path: content).
func initRepo(t testing.TB, env []string, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustGit(t, env, dir, "init", "-q", "-b", "main")
	mustGit(t, env, dir, "add", "-A")
	mustGit(t, env, dir, "commit", "-qm", "Initial commit")
}

func mustGit(t testing.TB, env []string, dir string, args ...string) string {
	t.Helper()
	out, err := gitOut(t, env, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lockedBuffer collects a process's output where the test reads it too.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Await returns the output once it holds every one of want, or after 10
// seconds: a process's stderr is copied by a goroutine of its own, so what
// it wrote before answering on stdout may arrive after the answer.
func (l *lockedBuffer) Await(want ...string) string {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s, all := l.String(), true
		for _, w := range want {
			all = all && strings.Contains(s, w)
		}
		if all || time.Now().After(deadline) {
			return s
		}
	}
}

// worker is the MCP client side: a coding agent's calls, checked.
type worker struct {
	t      *testing.T
	ctx    context.Context
	cs     *mcp.ClientSession
	ledger string // the server's ledger file
	// readLedger, when set, reads the server's ledger instead (a fleet's
	// stream), as JSON Lines.
	readLedger func() []byte
}

// ledgerText is the server's ledger as JSON Lines.
func (w *worker) ledgerText() []byte {
	if w.readLedger != nil {
		return w.readLedger()
	}
	data, _ := os.ReadFile(w.ledger)
	return data
}

// resultText is a result's text.
var resultText = mcptest.ResultText

// try calls a tool and returns its text and whether it was a tool error.
func (w *worker) try(name string, args map[string]any) (string, bool) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 20*time.Second)
	defer cancel()
	res, err := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		w.t.Fatalf("%s %v: protocol error: %v", name, args, err)
	}
	return resultText(res), res.IsError
}

// call calls a tool that must succeed.
func (w *worker) call(name string, args map[string]any) string {
	w.t.Helper()
	out, isErr := w.try(name, args)
	if isErr {
		w.t.Fatalf("%s %v: tool error: %s", name, args, out)
	}
	return out
}

// refused calls a tool that must fail with a tool error.
func (w *worker) refused(name string, args map[string]any) string {
	w.t.Helper()
	out, isErr := w.try(name, args)
	if !isErr {
		w.t.Fatalf("%s %v succeeded (%q); it must be refused", name, args, out)
	}
	return out
}

type pushResult struct {
	text  string
	isErr bool
	err   error
}

// pushAsync calls git_push in the background: it waits for the reviewer.
func (w *worker) pushAsync(args map[string]any) <-chan pushResult {
	ch := make(chan pushResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(w.ctx, 40*time.Second)
		defer cancel()
		res, err := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: "git_push", Arguments: args})
		if err != nil {
			ch <- pushResult{err: err}
			return
		}
		ch <- pushResult{text: resultText(res), isErr: res.IsError}
	}()
	return ch
}

func awaitPush(t *testing.T, ch <-chan pushResult, scr *ptytest.Screen) pushResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("git_push: protocol error: %v\nthe reviewer's terminal shows:\n%s", r.err, scr.String())
		}
		return r
	case <-time.After(45 * time.Second):
		t.Fatalf("git_push never answered; the reviewer's terminal shows:\n%s", scr.String())
	}
	return pushResult{}
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q is missing from:\n%s", what, w, got)
		}
	}
}

// hostileSample is n cases of the project's hostile path corpus, spread
// over the whole file so that every kind of rule is likely among them.
func hostileSample(t *testing.T, n int) []struct{ Path, Rule string } {
	t.Helper()
	f, err := os.Open("../../internal/pathguard/testdata/hostile-paths-rules.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all []struct{ Path, Rule string }
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var c struct {
			Path string `json:"path"`
			Rule string `json:"rule"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("corpus line %q: %v", sc.Text(), err)
		}
		if c.Rule == "" {
			t.Fatalf("corpus line %q names no rule", sc.Text())
		}
		all = append(all, struct{ Path, Rule string }{c.Path, c.Rule})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(all) < n {
		t.Fatalf("the corpus has %d cases, want at least %d", len(all), n)
	}
	out := make([]struct{ Path, Rule string }, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, all[i*len(all)/n])
	}
	return out
}

// startReview starts `airlock review [args]` in a pseudo-terminal.
func startReview(t *testing.T, bin string, env []string, dir string, args ...string) *ptytest.Process {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"review"}, args...)...)
	cmd.Env = env
	cmd.Dir = dir
	return ptytest.Start(t, cmd)
}

// waitPending waits until the server has a push waiting for a reviewer
// whose latest commit's message starts with subject: its request is in the
// ledger.
func waitPending(t *testing.T, w *worker, subject string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data := w.ledgerText()
		for _, line := range strings.Split(string(data), "\n") {
			var rec struct {
				Kind string `json:"kind"`
				Data struct {
					Commits []struct {
						Message string `json:"message"`
					} `json:"commits"`
				} `json:"data"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil || rec.Kind != "request" || len(rec.Data.Commits) == 0 {
				continue
			}
			if strings.HasPrefix(rec.Data.Commits[len(rec.Data.Commits)-1].Message, subject) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request to push %q reached the ledger %s:\n%s", subject, w.ledger, data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
