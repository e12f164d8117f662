package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// A failed push's error, a reviewer's reason or a path in the ledger
// cannot put escape sequences on the terminal of whoever reads it.
func TestLedgerShowIsSanitised(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := ledger.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(ledger.KindPush, map[string]string{"request": "r1", "result": "failed", "target": "local:/p", "ref": "refs/heads/main",
		"new": "abc", "error": "git: \x1b[2J\x1b]52;c;ZXZpbA==\x07fake\u202Eok"})
	l.Close()
	var out, errOut bytes.Buffer
	if code := run([]string{"ledger", "show", "--file", path}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if strings.ContainsAny(out.String(), "\x1b\x07\u202e") || !strings.Contains(out.String(), "^[[2J^[]52;c;ZXZpbA==^Gfake<U+202E>ok") {
		t.Errorf("ledger show printed %q", out.String())
	}
}

// ledger show marks the records after a break; verify fails with exit 3
// on a cut tail.
func TestLedgerShowMarksBreak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := ledger.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		l.Append(ledger.KindWithdrawal, map[string]string{"request": "r", "why": "test"})
	}
	l.Close()
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	edited := strings.Replace(lines[2], `"why":"test"`, `"why":"tampered"`, 1)
	os.WriteFile(path, []byte(lines[0]+lines[1]+edited+lines[3]), 0o600)
	var out, errOut bytes.Buffer
	run([]string{"ledger", "show", "--file", path}, nil, &out, &errOut)
	got := out.String()
	i := strings.Index(got, "---- the chain is broken here")
	if i < 0 || strings.Count(got[:i], "withdrawn") != 2 || strings.Count(got[i:], "?? ") != 2 {
		t.Errorf("ledger show:\n%s", got)
	}
	// Cut the tail: the chain is intact, the anchor is not.
	os.WriteFile(path, []byte(lines[0]+lines[1]), 0o600)
	if code := run([]string{"ledger", "verify", "--file", path}, nil, &out, &errOut); code != exitBroken {
		t.Errorf("verify of a cut ledger exited %d: %s", code, errOut.String())
	}
}

// A record lost at the tail is reported by every later verify (exit 3,
// with a "lost:" line), however many records were written since; ledger
// show marks the cut record; the warning serve prints at start says so.
func TestLedgerVerifyReportsCutForever(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := ledger.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	add := func(n int) {
		for range n {
			if _, err := l.Append(ledger.KindWithdrawal, map[string]string{"request": "r", "why": "test"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(3)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-40], 0o600) // record 3 cut in half
	for round := range 3 {
		add(1)
		var out, errOut bytes.Buffer
		if code := run([]string{"ledger", "verify", "--file", path}, nil, &out, &errOut); code != exitBroken {
			t.Fatalf("round %d: verify exited %d: %s%s", round, code, out.String(), errOut.String())
		}
		if !strings.Contains(out.String(), "lost: ledger line 4: cut: record 3 was lost") || !strings.Contains(out.String(), "note: ledger line 3: torn") ||
			!strings.Contains(errOut.String(), "not whole: 1 loss") {
			t.Errorf("round %d: verify said:\n%s%s", round, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	run([]string{"ledger", "show", "--file", path}, nil, &out, &errOut)
	if !strings.Contains(out.String(), "!! record 3 was lost") {
		t.Errorf("ledger show:\n%s", out.String())
	}
	var warn bytes.Buffer
	warnLedger(&warn, path)
	if !strings.Contains(warn.String(), "is not whole: record 3 was lost") {
		t.Errorf("serve's warning: %q", warn.String())
	}
}

var updateLedgerShow = flag.Bool("update-ledger-show", false, "rewrite testdata/ledger_show.golden")

// ledger show says what each record is: a network request as asking for
// the network, its grant with how far it reaches, its refusal; a push as
// a push, its approval, its landing; a withdrawal as what was withdrawn.
// The records are the gate's own (a real gate, a real ledger file).
func TestLedgerShowWordsMatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := ledger.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	g := approval.NewGate(l, approval.Policy{})
	submit := func(r *approval.Request) string {
		t.Helper()
		tk, err := g.Submit(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tk.Request().ID
	}
	resolve := func(d approval.Decision) {
		t.Helper()
		d.By = "alice (pid 42)"
		if _, err := g.Resolve(d); err != nil {
			t.Fatal(err)
		}
	}
	net := func(cmd string) *approval.Request {
		return &approval.Request{Kind: approval.KindNetwork, Worker: "writer", Command: cmd, Dir: "web", Reason: "fetch the dependencies"}
	}
	id := submit(net("npm install"))
	resolve(approval.Decision{Request: id, Verdict: approval.Approve, Scope: approval.ScopeCommand})
	id = submit(net("curl https://example.com/x.sh"))
	resolve(approval.Decision{Request: id, Verdict: approval.Reject, Reason: "not a script from the web"})
	id = submit(net("go mod download"))
	if err := g.Withdraw(id, "the worker's client disconnected"); err != nil {
		t.Fatal(err)
	}
	newHash := plumbing.NewHash("3e5126c0a1b2c3d4e5f60718293a4b5c6d7e8f90")
	push := &approval.Request{Worker: "writer", Target: "local:/srv/app", Describe: "local:/srv/app", Ref: "refs/heads/main",
		New: newHash, Files: []approval.FileChange{{Path: "a.go"}, {Path: "b.go"}}}
	id = submit(push)
	resolve(approval.Decision{Request: id, Verdict: approval.Approve})
	if err := g.RecordPush(approval.PushRecord{Request: id, Target: push.Target, Ref: push.Ref, New: newHash, Result: "pushed"}); err != nil {
		t.Fatal(err)
	}
	again := *push
	again.New = plumbing.NewHash("4f6237d0a1b2c3d4e5f60718293a4b5c6d7e8f90")
	id = submit(&again)
	if err := g.Withdraw(id, "the worker discarded the commit"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	var out, errOut bytes.Buffer
	if code := run([]string{"ledger", "show", "--file", path}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	// Times and request ids are the run's own.
	got := regexp.MustCompile(`(?m)^\S+ \S+  `).ReplaceAllString(out.String(), "TIME  ")
	ids := map[string]string{}
	got = regexp.MustCompile(`req-[0-9a-f]+`).ReplaceAllStringFunc(got, func(id string) string {
		if ids[id] == "" {
			ids[id] = fmt.Sprintf("req-%d", len(ids)+1)
		}
		return ids[id]
	})
	golden := filepath.Join("testdata", "ledger_show.golden")
	if *updateLedgerShow {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("ledger show:\n%s\nwant (%s):\n%s", got, golden, want)
	}
}

// An undo in ledger show reads as what it took back (it read "undid their
// approve before it landed", and said "landed" of a rejection too).
func TestLedgerShowUndoneWords(t *testing.T) {
	for verdict, want := range map[string]string{
		"approve": "their approval before it landed",
		"reject":  "their rejection before the worker was told",
		"pick":    "their decision (pick) before it took effect",
	} {
		if got := undoneWords(verdict); got != want {
			t.Errorf("undoneWords(%q) = %q, want %q", verdict, got, want)
		}
	}
}
