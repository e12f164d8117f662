package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/targets"
)

// The ledger against a real git target, from the real binary: each push
// leaves the ledger's head in the repository, so a ledger cut behind a
// push, its anchor rewritten to match, still fails verify (and passes once
// the repository's ref is gone: the ref is what catches it). A tail cut by
// a power cut is announced by serve at start and, once the next push wrote
// it down, reported by every verify.
func TestLedgerCaughtAgainstTheTarget(t *testing.T) {
	root := t.TempDir()
	env := isolatedEnv(t, root)
	repo, wf := runnerWorker(t, env, root)
	path := filepath.Join(root, "state", "airlock", "ledger.jsonl")
	pushes := func(contents ...string) *lockedBuffer {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, stderr := serveMCP(t, ctx, env, root, wf, "--auto-approve", "default", "--ephemeral")
		w := &worker{t: t, ctx: ctx, cs: cs}
		for _, c := range contents {
			w.call("write_file", map[string]any{"path": "notes.txt", "content": c})
			w.call("git_stage", map[string]any{"message": "Notes " + c})
			mustContain(t, "git_push", w.call("git_push", map[string]any{}), "pushed")
		}
		cs.Close()
		return stderr
	}
	verify := func(want int, says ...string) string {
		t.Helper()
		out, errOut, code := runAirlock(t, env, root, "ledger", "verify")
		if code != want {
			t.Fatalf("verify exited %d, want %d:\n%s%s", code, want, out, errOut)
		}
		mustContain(t, "verify", out+errOut, says...)
		return out + errOut
	}

	pushes("one\n")
	recs, err := ledger.Records(path)
	if err != nil {
		t.Fatal(err)
	}
	firstPush := len(recs)
	verify(0, "checked against local:"+repo+": it keeps record "+itoa(recs[firstPush-1].Seq))
	pushes("two\n")
	recs, _ = ledger.Records(path)
	last := recs[len(recs)-1]

	// A process of the same uid cuts the second push out of the ledger
	// and rewrites the anchor to match: the chain and the anchor agree.
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(path, []byte(strings.Join(lines[:firstPush], "")), 0o600)
	anchor, _ := json.Marshal(ledger.Anchor{Seq: recs[firstPush-1].Seq, Hash: recs[firstPush-1].Hash})
	os.WriteFile(ledger.AnchorPath(path), anchor, 0o600)
	verify(exitBroken, "cut: the ledger was cut or rewritten: target local:"+repo+" records record "+itoa(last.Seq)+" with hash "+last.Hash[:12],
		"the ledger ends at record "+itoa(recs[firstPush-1].Seq))
	// Or it writes a new ledger from the first record on, anchor and all.
	saved, _ := os.ReadFile(path)
	savedAnchor, _ := os.ReadFile(ledger.AnchorPath(path))
	forged := filepath.Join(t.TempDir(), "ledger.jsonl")
	fl, err := ledger.Open(forged)
	if err != nil {
		t.Fatal(err)
	}
	for range 12 {
		fl.Append(ledger.KindWithdrawal, map[string]string{"request": "r", "why": "forged"})
	}
	fl.Close()
	for _, p := range []string{"", ".anchor"} {
		data, _ := os.ReadFile(forged + p)
		os.WriteFile(path+p, data, 0o600)
	}
	// It names no target now: verify run in the repository checks it.
	if out, _, code := runAirlock(t, env, repo, "ledger", "verify"); code != exitBroken ||
		!strings.Contains(out, "cut: the ledger was rewritten from its first record, or is not the one target local:"+repo+" knows") {
		t.Errorf("verify of a ledger forged from its first record, in the repository, exited %d:\n%s", code, out)
	}
	os.WriteFile(path, saved, 0o600)
	os.WriteFile(ledger.AnchorPath(path), savedAnchor, 0o600)

	host, abs := targets.LedgerAt(path)
	mustGit(t, env, repo, "update-ref", "-d", targets.LedgerRef(host, abs))
	verify(0, "chain intact")

	// A power cut takes the anchored tail record in half.
	data, _ = os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-50], 0o600)
	stderr := pushes("three\n")
	mustContain(t, "serve's stderr", stderr.String(), "is not whole: the ledger ends at record "+itoa(recs[firstPush-2].Seq),
		"record "+itoa(recs[firstPush-1].Seq)+" is gone")
	for range 2 {
		verify(exitBroken, "lost: ", "record "+itoa(recs[firstPush-1].Seq)+" was lost", "checked against local:"+repo, "not whole: 1 loss")
	}
	stderr = pushes("four\n")
	mustContain(t, "serve's stderr", stderr.String(), "is not whole: record "+itoa(recs[firstPush-1].Seq)+" was lost")
	verify(exitBroken, "record "+itoa(recs[firstPush-1].Seq)+" was lost")
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
