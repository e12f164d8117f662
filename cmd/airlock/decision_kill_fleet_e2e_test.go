//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker/natsqueue"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/crashpoint"
)

// TestFleetKillDecision is TestDecisionSurvivesAKill in a fleet:
// a real `airlock serve --store` on a real NATS server (its session's
// journal and its ledger in JetStream), a reviewer deciding through the
// fleet's queue (natsqueue), the server SIGKILLed at a named step between
// the decision and the landing. After the restart: one request and one
// decision of the id in the fleet's ledger (two requests when the kill
// came before the decision was recorded), the request offered to no
// reviewer, the reviewer told the decision was taken (by the restarted
// server when the kill cut its answer), and exactly what was decided in
// the target. The default run kills at three steps; AIRLOCK_LONG_TESTS=1
// at every step (-run TestFleetKillDecision).
func TestFleetKillDecision(t *testing.T) {
	cases := []killCase{
		{approval.Approve, crashpoint.DecisionRecorded},
		{approval.Pick, crashpoint.DecisionRecorded},
		{approval.Reject, crashpoint.ReviewerAnswered},
	}
	if os.Getenv("AIRLOCK_LONG_TESTS") != "" {
		cases = killCases()
	}
	for _, kc := range cases {
		t.Run(kc.name(), func(t *testing.T) {
			runFleetKillCase(t, kc)
		})
	}
}

func runFleetKillCase(t *testing.T, kc killCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newQueueRig(t)
	for name, content := range map[string]string{"a.txt": numbered("alpha", 30), "b.txt": numbered("bravo", 5)} {
		if err := os.WriteFile(filepath.Join(f.repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustGit(t, f.env, f.repo, "add", "a.txt", "b.txt")
	mustGit(t, f.env, f.repo, "commit", "-q", "-m", "Add a and b")
	mustGit(t, f.env, f.repo, "branch", "-f", "agent", "HEAD")
	base := strings.TrimSpace(mustGit(t, f.env, f.repo, "rev-parse", "agent"))
	serve := func(env []string) *durableServer {
		d := startDurable(t, ctx, f.bin, env, f.serverRoot, append([]string{"--worker", f.workerFile, "--timeout", "1s", "--store", f.store},
			fleetTrust(t, f.reviewerRoot)...)...)
		d.stderr.Await("requests also go to the fleet's review queue")
		return d
	}

	d := serve(append(append([]string(nil), f.env...), "AIRLOCK_TEST_CRASH_AT="+kc.step))
	w := d.w
	w.call("git_pull", map[string]any{})
	a := strings.Replace(numbered("alpha", 30), "alpha 2\n", "alpha 2, the first change\n", 1)
	a = strings.Replace(a, "alpha 28\n", "alpha 28, the declined change\n", 1)
	w.call("write_file", map[string]any{"path": "a.txt", "content": a})
	w.call("write_file", map[string]any{"path": "b.txt", "content": numbered("bravo", 5) + "bravo, declined too\n"})
	w.call("git_stage", map[string]any{"message": "Change a and b"})
	if out := w.call("git_push", map[string]any{}); !strings.Contains(out, "req-") {
		t.Fatalf("git_push did not wait for a reviewer: %s", out)
	}
	id := f.savedRequest(t)

	rv, err := natsqueue.Watch(ctx, f.fleetConn(t), natsqueue.Options{By: "fleet reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	// The key the rig's servers trust (fleetTrust).
	key, err := reviewerKeyOf(t, f.reviewerRoot)
	if err != nil {
		t.Fatal(err)
	}
	rv.SetKey(key)
	in, err := rv.Next(ctx)
	if err != nil || in.Request.ID != id {
		t.Fatalf("the reviewer was not offered %s: %v", id, err)
	}
	decided := make(chan error, 1)
	go func() {
		_, err := in.Decide(killDecision(t, in.Request, kc.verdict))
		decided <- err
	}()
	d.wait(t)
	if !strings.Contains(d.cmd.ProcessState.String(), "killed") {
		t.Fatalf("the server was not killed at %s: %s\n%s", kc.step, d.cmd.ProcessState, d.stderr.String())
	}

	again := serve(f.env)
	select {
	case err := <-decided:
		if err != nil {
			t.Fatalf("killed at %s, the reviewer was told: %v; it must hear the decision was taken (the restarted server applies or settles it)", kc.step, err)
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("killed at %s, the reviewer never heard whether the decision was taken:\n%s", kc.step, again.stderr.String())
	}
	checkLanded(t, f.env, f.repo, "agent", base, kc.verdict)
	if kc.verdict == approval.Reject && kc.step == crashpoint.DecisionRecorded {
		// Killed before the push could end and save that it did: the
		// resume tells the worker.
		mustContain(t, "what the resumed worker is told", again.cs.InitializeResult().Instructions, id, "rejected", "not this one")
	}
	// Offered to no reviewer: a new one, once it has read the queue.
	rv2, err := natsqueue.Watch(ctx, f.fleetConn(t), natsqueue.Options{By: "late reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	defer rv2.Close()
	time.Sleep(300 * time.Millisecond)
	for _, in := range rv2.Pending() {
		if in.Request.ID == id {
			t.Fatalf("request %s, decided, is offered again after the restart", id)
		}
	}
	checkOneDecision(t, f.ledgerRecords(t), id, kc)
	checkFleetDecisionBy(t, f.ledgerRecords(t), id)
}

// checkFleetDecisionBy checks the one decision of id is the fleet
// reviewer's.
func checkFleetDecisionBy(t *testing.T, recs []ledger.Record, id string) {
	t.Helper()
	for _, r := range recs {
		var d struct{ Request, By string }
		if r.Kind == ledger.KindDecision && json.Unmarshal(r.Data, &d) == nil && d.Request == id && d.By != "fleet reviewer" {
			t.Fatalf("the decision of %s is by %q, not the fleet's reviewer", id, d.By)
		}
	}
}
