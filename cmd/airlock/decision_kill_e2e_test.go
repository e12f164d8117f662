//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/crashpoint"
)

// One decision per request, across any crash (issue 32, "a decision is
// asked twice"). A real `airlock serve` (stdio, a durable session, a bare
// target) has a push of one commit (two hunks of a.txt, one of b.txt)
// waiting; a reviewer, through the server's broker socket, approves it,
// picks the first hunk of a.txt with an edited message, or rejects it;
// the server kills itself with SIGKILL at a named step between that
// decision and the landing (AIRLOCK_TEST_CRASH_AT, package crashpoint).
// After the restart the resume runs, and:
//   - a decision the ledger holds is never offered again: the ledger has
//     exactly one request and one decision of the id (two requests, the
//     original and the one offered again, only when the kill came before
//     the decision was recorded, and the reviewer was not told it was
//     taken);
//   - what lands is exactly what was decided: the approved commit, the
//     picked hunk with the edited message and never the declined one, or
//     nothing after a rejection;
//   - the reviewer is told a decision was taken only once the ledger holds
//     it.
//
// The default run kills at a few steps per verdict; AIRLOCK_LONG_TESTS=1
// kills at every step (-run TestDecisionSurvivesAKill).

// killCase is one kill: a verdict, and the step the server dies at.
type killCase struct {
	verdict approval.Verdict
	step    string
}

func killCases() []killCase {
	short := []killCase{
		{approval.Approve, crashpoint.DecisionRecorded},
		{approval.Approve, crashpoint.LandingRecorded},
		{approval.Pick, crashpoint.DecisionRecorded},
		{approval.Pick, crashpoint.ReviewerAnswered},
		{approval.Reject, crashpoint.DecisionRecorded},
		{approval.Reject, crashpoint.ReviewerAnswered},
	}
	if os.Getenv("AIRLOCK_LONG_TESTS") == "" {
		return short
	}
	var all []killCase
	for _, v := range []approval.Verdict{approval.Approve, approval.Pick} {
		for _, s := range []string{crashpoint.PickMade, crashpoint.DecisionRecorded, crashpoint.ReviewerAnswered,
			crashpoint.LandingRecorded, crashpoint.LandingSaved, crashpoint.TargetPushed} {
			if v == approval.Approve && s == crashpoint.PickMade {
				continue // an approval makes no pick
			}
			all = append(all, killCase{v, s})
		}
	}
	return append(all, killCase{approval.Reject, crashpoint.DecisionRecorded}, killCase{approval.Reject, crashpoint.ReviewerAnswered})
}

// name is the case's subtest name, short: a Unix socket's path holds
// it (in the test's temporary directory) and must stay under 108 bytes.
func (kc killCase) name() string {
	short := map[string]string{crashpoint.PickMade: "picked", crashpoint.DecisionRecorded: "recorded", crashpoint.ReviewerAnswered: "answered",
		crashpoint.LandingRecorded: "landing", crashpoint.LandingSaved: "saved", crashpoint.TargetPushed: "pushed"}
	return string(kc.verdict) + "/" + short[kc.step]
}

// TestDecisionSurvivesAKill: see the top of this file.
func TestDecisionSurvivesAKill(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	for _, kc := range killCases() {
		t.Run(kc.name(), func(t *testing.T) {
			runKillCase(t, bin, kc)
		})
	}
}

// numbered is n lines "prefix i".
func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s %d\n", prefix, i)
	}
	return b.String()
}

// killRig is one kill case's world: the target, the worker, the ledger.
type killRig struct {
	root, bare, wf, ledger, sockets string
	env                             []string
}

func newKillRig(t *testing.T) *killRig {
	root := t.TempDir()
	k := &killRig{root: root, env: isolatedEnv(t, root), bare: filepath.Join(root, "target.git"), wf: filepath.Join(root, "w.md"),
		ledger: filepath.Join(root, "state", "airlock", "ledger.jsonl"), sockets: filepath.Join(root, "run", "airlock")}
	src := filepath.Join(root, "src")
	initRepo(t, k.env, src, map[string]string{"a.txt": numbered("alpha", 30), "b.txt": numbered("bravo", 5)})
	mustGit(t, k.env, root, "clone", "-q", "--bare", src, k.bare)
	front := fmt.Sprintf("---\nname: killed\ngit:\n  default_target: {type: local-bare, path: %q, branch: main}\n---\n", k.bare)
	if err := os.WriteFile(k.wf, []byte(front), 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

// decision is the reviewer's decision of req for verdict v: a pick takes
// a.txt's first hunk only, under an edited message.
func killDecision(t *testing.T, req *approval.Request, v approval.Verdict) approval.Decision {
	t.Helper()
	switch v {
	case approval.Reject:
		return approval.Decision{Verdict: approval.Reject, Reason: "not this one"}
	case approval.Approve:
		return approval.Decision{Verdict: approval.Approve}
	}
	if len(req.Commits) != 1 || !req.Pickable {
		t.Fatalf("the request cannot be picked hunk by hunk: %d commits, pickable %v", len(req.Commits), req.Pickable)
	}
	for _, f := range req.Commits[0].Files {
		if f.Path == "a.txt" && len(f.Hunks) == 2 {
			return approval.Decision{Verdict: approval.Pick, Accept: []approval.Accepted{{
				Commit: req.Commits[0].ID, Message: "Only the first change\n\nPicked before the kill.",
				Files: []approval.AcceptedFile{{Path: "a.txt", Hunks: []approval.AcceptedHunk{{Index: 0, ID: approval.HunkID(f.Hunks[0])}}}},
			}}}
		}
	}
	t.Fatalf("a.txt has not two hunks in the request: %+v", req.Commits[0].Files)
	return approval.Decision{}
}

func runKillCase(t *testing.T, bin string, kc killCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	k := newKillRig(t)
	base := strings.TrimSpace(mustGit(t, k.env, k.bare, "rev-parse", "main"))

	d := startDurable(t, ctx, bin, append(append([]string(nil), k.env...), "AIRLOCK_TEST_CRASH_AT="+kc.step), k.root, "--worker", k.wf, "--timeout", "1s")
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

	rv, err := broker.Watch(ctx, k.sockets)
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	// The key the server trusts by default: this machine's reviewer's,
	// made in its state directory at its start.
	key, err := reviewerKeyOf(t, k.root)
	if err != nil {
		t.Fatal(err)
	}
	rv.SetKey(key)
	in, err := rv.Next(ctx)
	if err != nil {
		t.Fatalf("no request reached the reviewer: %v", err)
	}
	id := in.Request.ID
	dec := killDecision(t, in.Request, kc.verdict)
	_, decideErr := in.Decide(dec)
	d.wait(t) // killed at the step
	if !strings.Contains(d.cmd.ProcessState.String(), "killed") {
		t.Fatalf("the server was not killed at %s: %s\n%s", kc.step, d.cmd.ProcessState, d.stderr.String())
	}
	beforeRecord := kc.step == crashpoint.PickMade || kc.step == crashpoint.DecisionRecorded
	if beforeRecord != (decideErr != nil) {
		t.Fatalf("killed at %s, the reviewer was told %v: it must hear a decision was taken exactly when the ledger holds it and the server answered", kc.step, decideErr)
	}

	again := startDurable(t, ctx, bin, k.env, k.root, "--worker", k.wf, "--timeout", "1s")
	again.w.ledger = k.ledger
	rv2, err := broker.Watch(ctx, k.sockets)
	if err != nil {
		t.Fatal(err)
	}
	defer rv2.Close()
	if kc.step == crashpoint.PickMade {
		// Nothing was recorded, nobody was told: it is asked again, under
		// its id, and decided once.
		in2, err := rv2.Next(ctx)
		if err != nil || in2.Request.ID != id {
			t.Fatalf("the undecided request was not offered again: %v", err)
		}
		if _, err := in2.Decide(killDecision(t, in2.Request, kc.verdict)); err != nil {
			t.Fatalf("deciding the request offered again: %v", err)
		}
	} else {
		assertNotOffered(t, rv2, again, id)
	}
	if kc.verdict == approval.Reject && kc.step == crashpoint.DecisionRecorded {
		// Killed before the push could end and save that it did: the
		// resume tells the worker.
		mustContain(t, "what the resumed worker is told", again.cs.InitializeResult().Instructions, id, "rejected", "not this one")
	}
	checkLanded(t, k.env, k.bare, "main", base, kc.verdict)
	checkOneDecision(t, readLedger(t, k.ledger), id, kc)
	// A stale answer to the old offer, sent to the resumed server, is
	// refused with the first decision named, and recorded nowhere.
	if ack := staleDecision(t, k.sockets, again.cmd.Process.Pid, id, key); !strings.Contains(ack, "already decided: "+string(kc.verdict)+" by ") {
		t.Fatalf("a second decision of %s was answered %q; want it refused as already decided", id, ack)
	}
	checkOneDecision(t, readLedger(t, k.ledger), id, kc)
	if out, errOut, code := runAirlock(t, k.env, k.root, "ledger", "verify"); code != 0 {
		t.Fatalf("airlock ledger verify exited %d:\n%s%s", code, out, errOut)
	}
}

// assertNotOffered checks that the resumed server offers no request id:
// its hello comes first, then every pending request.
func assertNotOffered(t *testing.T, rv *broker.Reviewer, d *durableServer, id string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		found := false
		for _, s := range rv.Servers() {
			found = found || s.PID == d.cmd.Process.Pid
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed server never reached the reviewer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	for _, in := range rv.Pending() {
		if in.Request.ID == id {
			t.Fatalf("request %s, decided before the kill, was offered again after the restart", id)
		}
	}
}

// checkLanded waits for what was decided to land (nothing, for a
// rejection) and checks the target holds exactly that.
func checkLanded(t *testing.T, env []string, repo, branch, base string, v approval.Verdict) {
	t.Helper()
	git := func(args ...string) string { return mustGit(t, env, repo, args...) }
	head := base
	for deadline := time.Now().Add(30 * time.Second); head == base && v != approval.Reject && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		head = strings.TrimSpace(git("rev-parse", branch))
	}
	if v == approval.Reject {
		time.Sleep(300 * time.Millisecond)
		head = strings.TrimSpace(git("rev-parse", branch))
	}
	a, b := git("show", branch+":a.txt"), git("show", branch+":b.txt")
	count := strings.TrimSpace(git("rev-list", "--count", base+".."+branch))
	msg := git("log", "-1", "--format=%B", branch)
	first, declined, bDeclined := strings.Contains(a, "the first change"), strings.Contains(a, "the declined change"), strings.Contains(b, "declined too")
	switch v {
	case approval.Reject:
		if head != base {
			t.Fatalf("a rejected push landed: %s moved to %s", branch, head)
		}
	case approval.Approve:
		if count != "1" || !first || !declined || !bDeclined || !strings.HasPrefix(msg, "Change a and b") {
			t.Fatalf("the approved commit did not land as it was (%s commits, message %q):\na.txt:\n%s\nb.txt:\n%s", count, msg, a, b)
		}
	case approval.Pick:
		if count != "1" || !first || declined || bDeclined || msg != "Only the first change\n\nPicked before the kill.\n\n" && msg != "Only the first change\n\nPicked before the kill.\n" {
			t.Fatalf("the pick did not land as picked (%s commits, message %q; the declined hunk landed: %v, b.txt's: %v):\na.txt:\n%s", count, msg, declined, bDeclined, a)
		}
	}
}

// readLedger reads a ledger file's records.
func readLedger(t *testing.T, path string) []ledger.Record {
	t.Helper()
	recs, err := ledger.Records(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// checkOneDecision reads the ledger: one decision of id, and one request
// (two when it was offered again, the kill before its decision).
func checkOneDecision(t *testing.T, recs []ledger.Record, id string, kc killCase) {
	t.Helper()
	requests, decisions := 0, 0
	var verdicts []string
	for _, r := range recs {
		var d struct {
			ID, Request, Verdict string
		}
		_ = json.Unmarshal(r.Data, &d) // a record of another shape counts for nothing
		switch {
		case r.Kind == ledger.KindRequest && d.ID == id:
			requests++
		case r.Kind == ledger.KindDecision && d.Request == id:
			decisions++
			verdicts = append(verdicts, d.Verdict)
		}
	}
	wantRequests := 1
	if kc.step == crashpoint.PickMade {
		wantRequests = 2
	}
	if requests != wantRequests || decisions != 1 || verdicts[0] != string(kc.verdict) {
		t.Fatalf("killed at %s, the ledger holds %d requests (want %d) and %d decisions %v of %s (want one %s)",
			kc.step, requests, wantRequests, decisions, verdicts, id, kc.verdict)
	}
}

// staleDecision sends, over the broker's socket of server pid, an
// approval of id as a reviewer answering an old offer would, and returns
// the server's error ("" when it took it).
func staleDecision(t *testing.T, sockets string, pid int, id string, key approval.Signer) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(sockets, fmt.Sprintf("server-%d-*.sock", pid)))
	if len(paths) != 1 {
		t.Fatalf("the socket of server %d: %v", pid, paths)
	}
	c, err := net.Dial("unix", paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	// Signed by the trusted reviewer, in the name the kernel gives this
	// process, as airlock review signs: refused for being stale, not for
	// its signature.
	name := fmt.Sprintf("uid %d", os.Getuid())
	if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil && u.Username != "" {
		name = u.Username
	}
	signed, err := approval.Sign(key, &approval.Request{ID: id}, approval.Decision{Verdict: approval.Approve,
		By: fmt.Sprintf("%s (pid %d)", name, os.Getpid())})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := json.Marshal(map[string]any{"type": "decision", "signed": signed})
	if _, err := c.Write(append(msg, '\n')); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(c)
	for {
		var m struct{ Type, ID, Error string }
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("no answer to the stale decision: %v", err)
		}
		if m.Type == "ack" && m.ID == id {
			if m.Error == "" {
				return ""
			}
			return m.Error
		}
	}
}
