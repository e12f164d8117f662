//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/ledger"
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
			// The key the server trusts by default: this machine's
			// reviewer's, in the state directory it made it in.
			key, err := reviewerKeyOf(t, r.root)
			if err != nil {
				t.Fatal(err)
			}
			rv.SetKey(key)
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
