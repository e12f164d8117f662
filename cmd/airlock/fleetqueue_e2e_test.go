//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/approval/ledger/natsledger"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/session/store/natsstore"
	"github.com/nats-io/nats.go"
)

// TestReviewThroughTheFleetQueue: a real `airlock serve --store` (stdio,
// a worker on a real repository) and a real `airlock review --store` in a
// terminal that shares no directory with it (another runtime directory:
// no socket of the server's reaches it), both on one NATS server. The
// reviewer sees the push, with its server's host, through the queue and
// approves it; the server's ledger records the reviewer's decision, and
// the push lands in the target.
func TestReviewThroughTheFleetQueue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newQueueRig(t)
	d := f.serve(ctx, "--ephemeral")
	w, repo, env := d.w, f.repo, f.env
	push := f.ask(d)

	rv := startReview(t, f.bin, isolatedEnv(t, f.reviewerRoot), f.reviewerRoot, "--store", f.store)
	scr := rv.Screen
	const within = 20 * time.Second
	host, _ := os.Hostname()
	// The rig's NATS lets anyone in: the reviewer is warned, not refused
	// (its decisions are signed over what it saw).
	scr.WaitFor(t, 0, "let this reviewer in without credentials", within)
	at := scr.WaitFor(t, 0, "through its review queue at", within)
	at = scr.WaitFor(t, at, fmt.Sprintf(`from worker "fleet-writer" (server pid %d on %q)`, d.cmd.Process.Pid, host), within)
	at = scr.WaitFor(t, at, "[?]help", within)
	rv.Press(t, "a")
	scr.WaitFor(t, at, "Approved; the push goes ahead.", within)
	if r := awaitPush(t, push, scr); r.isErr {
		t.Fatalf("the push: %s", r.text)
	}
	if got := mustGit(t, env, repo, "show", "agent:notes/fleet.md"); got != "reviewed from afar\n" {
		t.Errorf("the target's agent branch: %q", got)
	}
	ledger := w.ledgerText()
	if !strings.Contains(string(ledger), `"verdict":"approve"`) || !strings.Contains(string(ledger), "fleet queue") {
		t.Errorf("the server's ledger has no approval by the fleet's reviewer:\n%s", ledger)
	}
	if _, err := os.Stat(filepath.Join(f.reviewerRoot, "state", "airlock", "ledger.jsonl")); err == nil {
		t.Error("the reviewer wrote a ledger of its own")
	}
	rv.Press(t, "\x03")
	if code := rv.Wait(t, within); code != 0 {
		t.Errorf("airlock review exited %d after Ctrl-C", code)
	}
}

// TestFleetDecisionReachesTheRestartedServer: the server is killed
// (SIGKILL) while its push waits on a reviewer's screen; the reviewer
// decides it meanwhile and is told the decision is queued; the
// server started again resumes the session, offers the request again
// under its id, applies the queued decision (the ledger records it, by
// the fleet's reviewer) and the push lands.
func TestFleetDecisionReachesTheRestartedServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newQueueRig(t)
	d := f.serve(ctx)
	f.ask(d)
	id := f.savedRequest(t)
	rv := startReview(t, f.bin, isolatedEnv(t, f.reviewerRoot), f.reviewerRoot, "--store", f.store)
	scr := rv.Screen
	const within = 20 * time.Second
	at := scr.WaitFor(t, 0, "Request "+id+` from worker "fleet-writer"`, within)
	at = scr.WaitFor(t, at, "[?]help", within)
	d.cmd.Process.Kill() // the request is in the queue and on the screen
	d.wait(t)
	rv.Press(t, "a")
	at = scr.WaitFor(t, at, "Queued: ", within)
	scr.WaitFor(t, at, "applies it then", within)

	again := f.serve(ctx)
	again.w.ledger = d.w.ledger
	mustContain(t, "stderr at the restart", again.stderr.Await("resumed session", "1 push(es) waiting for review"), "resumed session", "1 push(es) waiting for review")
	out := again.w.call("git_push", map[string]any{})
	if !strings.Contains(out, "pushed") {
		t.Fatalf("git_push after the restart: %s\n%s", out, again.stderr.String())
	}
	if got := mustGit(t, f.env, f.repo, "show", "agent:notes/fleet.md"); got != "reviewed from afar\n" {
		t.Errorf("the target's agent branch: %q", got)
	}
	recs := f.ledgerRecords(t)
	var resumed, approved, pushed bool
	for _, rec := range recs {
		var r struct {
			ID, Request, Verdict, Result, By string
			Resumed                          bool
		}
		json.Unmarshal(rec.Data, &r)
		resumed = resumed || rec.Kind == ledger.KindRequest && r.ID == id && r.Resumed
		approved = approved || rec.Kind == ledger.KindDecision && r.Request == id && r.Verdict == "approve" && strings.Contains(r.By, "fleet queue")
		pushed = pushed || rec.Kind == ledger.KindPush && r.Request == id && r.Result == "pushed"
	}
	if !resumed || !approved || !pushed {
		t.Fatalf("the ledger lacks the resumed request (%v), the fleet reviewer's approval (%v) or the push (%v)", resumed, approved, pushed)
	}
	rv.Press(t, "\x03")
	rv.Wait(t, within)
}

// queueRig is a NATS server, a worker on a real repository whose
// default target is its branch agent, and two roots that share nothing:
// the server's and the reviewer's.
type queueRig struct {
	t                        *testing.T
	bin, store               string
	serverRoot, reviewerRoot string
	env                      []string
	repo, workerFile         string
	nc                       *nats.Conn
	// trust is what serve is given besides: fleetTrust's when nil.
	trust []string
	// admin are the options the rig's own connection reads the fleet with.
	admin []nats.Option
}

func newQueueRig(t *testing.T) *queueRig {
	return newQueueRigOn(t, natstest.Server(t, natstest.Options{}).ClientURL())
}

// newQueueRigOn is newQueueRig on the NATS at store.
func newQueueRigOn(t *testing.T, store string) *queueRig {
	requireGit(t)
	f := &queueRig{t: t, bin: airlockBinary(t), store: store,
		serverRoot: t.TempDir(), reviewerRoot: t.TempDir()}
	f.env = isolatedEnv(t, f.serverRoot)
	f.repo = filepath.Join(f.serverRoot, "project")
	gittest.InitRepo(t, f.env, f.repo, "Initial commit", map[string]string{"README.md": "# project\n"})
	mustGit(t, f.env, f.repo, "branch", "agent")
	f.workerFile = filepath.Join(f.serverRoot, "fleet-writer.md")
	front := fmt.Sprintf("---\nname: fleet-writer\ngit:\n  default_target: {type: local, path: %q, branch: agent}\n---\n", f.repo)
	if err := os.WriteFile(f.workerFile, []byte(front), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// serve starts airlock serve --store on the rig's worker.
func (f *queueRig) serve(ctx context.Context, args ...string) *durableServer {
	trust := f.trust
	if trust == nil {
		trust = fleetTrust(f.t, f.reviewerRoot)
	}
	d := startDurable(f.t, ctx, f.bin, f.env, f.serverRoot, append(append([]string{"--worker", f.workerFile, "--timeout", "60s", "--store", f.store}, trust...), args...)...)
	d.w.readLedger = func() []byte {
		var b bytes.Buffer
		for _, rec := range f.ledgerRecords(f.t) {
			line, _ := json.Marshal(rec)
			b.Write(append(line, '\n'))
		}
		return b.Bytes()
	}
	mustContain(f.t, "airlock serve's stderr", d.stderr.Await("requests also go to the fleet's review queue"), "requests also go to the fleet's review queue",
		"applies decisions signed by the reviewer keys "+trust[len(trust)-1])
	return d
}

// ask writes a file, stages it and pushes it; the push waits.
func (f *queueRig) ask(d *durableServer) <-chan pushResult {
	d.w.call("write_file", map[string]any{"path": "notes/fleet.md", "content": "reviewed from afar\n"})
	d.w.call("git_stage", map[string]any{"message": "Notes from the fleet"})
	push := d.w.pushAsync(map[string]any{})
	waitPending(f.t, d.w, "Notes from the fleet")
	return push
}

// savedRequest is the id of the push request the ledger holds, once the
// session's journal has saved it too (a kill before would leave nothing
// to resume).
func (f *queueRig) savedRequest(t *testing.T) string {
	t.Helper()
	recs := f.ledgerRecords(t)
	var id string
	for _, rec := range recs {
		var r struct{ ID string }
		if rec.Kind == ledger.KindRequest && json.Unmarshal(rec.Data, &r) == nil {
			id = r.ID
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if f.journalsHold(t, id) {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("the push of request %q was never saved to the session's journal", id)
		}
	}
}

// fleetConn is a connection to the rig's NATS.
func (f *queueRig) fleetConn(t *testing.T) *nats.Conn {
	t.Helper()
	if f.nc == nil {
		nc, err := nats.Connect(f.store, f.admin...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		f.nc = nc
	}
	return f.nc
}

// ledgerRecords reads the fleet's ledger (the stream the servers of the
// rig write with --store).
func (f *queueRig) ledgerRecords(t *testing.T) []ledger.Record {
	t.Helper()
	l, err := natsledger.Open(f.fleetConn(t), natsledger.Options{Prefix: "airlock"})
	if errors.Is(err, natsledger.ErrNoLedger) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Records()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// journalsHold reports whether a session's journal in the fleet's store
// holds s.
func (f *queueRig) journalsHold(t *testing.T, s string) bool {
	t.Helper()
	st, err := natsstore.New(f.fleetConn(t), natsstore.Options{Prefix: "airlock"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range list {
		_ = st.ReadJournal(l.ID, func(byte) bool { return true }, func(_ byte, p []byte) error {
			found = found || bytes.Contains(p, []byte(s))
			return nil
		}) // a journal being written may read short: the next round reads it again
	}
	return found
}
