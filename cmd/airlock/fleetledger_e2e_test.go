package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval/ledger/natsledger"
	"github.com/airlock-dev/airlock/internal/natstest"
	"github.com/airlock-dev/airlock/targets"
)

// One ledger for a fleet, through the real binary: two servers on two
// machines' state directories (--store) push to one repository; their
// records are one chain in the stream, which ledger verify and show
// read with --store, checked against the head the target keeps (one ref
// for the fleet's ledger, whichever server pushed). Neither machine has
// a ledger file. A message put in the stream by something else than
// airlock breaks verify (exit 3) and is marked by show.
func TestFleetLedgerThroughTheBinary(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	url := srv.ClientURL()
	root := t.TempDir()
	env := isolatedEnv(t, root)
	repo, wf := runnerWorker(t, env, root)
	push := func(env []string, content string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, stderr := serveMCP(t, ctx, env, root, wf, append([]string{"--store", url, "--auto-approve", "default", "--ephemeral"}, fleetTrust(t, root)...)...)
		w := &worker{t: t, ctx: ctx, cs: cs}
		w.call("write_file", map[string]any{"path": "notes.txt", "content": content})
		w.call("git_stage", map[string]any{"message": "Notes " + content})
		mustContain(t, "git_push", w.call("git_push", map[string]any{}), "pushed")
		cs.Close()
		mustContain(t, "serve's stderr", stderr.String(), "(ledger: "+url+" stream airlock_ledger)")
	}
	other := isolatedEnv(t, t.TempDir())
	push(env, "one\n")
	push(other, "two\n")
	push(env, "three\n")
	for _, e := range [][]string{env, other} {
		state := envValue(e, "AIRLOCK_STATE_DIR")
		if state == "" {
			t.Fatal("the test's environment names no AIRLOCK_STATE_DIR")
		}
		if _, err := os.Stat(filepath.Join(state, "ledger.jsonl")); !os.IsNotExist(err) {
			t.Errorf("a server with --store wrote a ledger file: %v", err)
		}
	}

	l, err := natsledger.Open(natstest.Connect(t, url), natsledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Records()
	if err != nil {
		t.Fatal(err)
	}
	pushed := 0
	for _, r := range recs {
		if r.Kind == "push" && strings.Contains(string(r.Data), `"result":"pushed"`) {
			pushed++
		}
	}
	if pushed != 3 {
		t.Fatalf("the fleet's ledger holds %d pushes, want 3 (from two servers)", pushed)
	}
	head := recs[len(recs)-1]
	host, abs := targets.LedgerAt(l.Path())
	kept := mustGit(t, env, repo, "log", "-1", "--format=%B", targets.LedgerRef(host, abs))
	mustContain(t, "the head the target keeps", kept, "Airlock-Ledger-Seq: "+itoa(head.Seq), "Airlock-Ledger-Hash: "+head.Hash)

	out, errOut, code := runAirlock(t, other, root, "ledger", "verify", "--store", url)
	if code != 0 {
		t.Fatalf("verify --store exited %d:\n%s%s", code, out, errOut)
	}
	mustContain(t, "verify --store", out, url+" stream airlock_ledger: "+itoa(uint64(len(recs)))+" records, chain intact; head "+head.Hash[:12],
		"checked against local:"+repo+": it keeps record "+itoa(head.Seq))
	out, _, code = runAirlock(t, other, root, "ledger", "show", "--store", url, "-n", "2")
	if code != 0 || strings.Count(out, "\n") != 2 {
		t.Fatalf("show --store -n 2 exited %d:\n%s", code, out)
	}
	mustContain(t, "show --store", out, "#"+itoa(head.Seq), "pushed")

	// Something else than airlock publishes to the ledger's subject.
	js, err := jetstream.New(natstest.Connect(t, url))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), "airlock.ledger", []byte(`{"verdict":"approved"}`)); err != nil {
		t.Fatal(err)
	}
	push(env, "four\n")
	out, errOut, code = runAirlock(t, env, root, "ledger", "verify", "--store", url)
	if code != exitBroken {
		t.Fatalf("verify of a ledger with a foreign message exited %d, want %d:\n%s%s", code, exitBroken, out, errOut)
	}
	bad := fmt.Sprintf("ledger message %d: malformed", len(recs)+1)
	mustContain(t, "verify --store", errOut, "the chain is broken after "+itoa(uint64(len(recs)))+" good records", bad)
	out, _, _ = runAirlock(t, env, root, "ledger", "show", "--store", url, "-n", "100")
	mustContain(t, "show --store", out, "---- the chain is broken here ("+bad, "?? ")

	// The stream deleted whole (DenyDelete is about messages) and made
	// again by the next server that writes: a chain that verifies on its
	// own, caught by the head the target keeps.
	if err := js.DeleteStream(context.Background(), "airlock_ledger"); err != nil {
		t.Fatal(err)
	}
	push(env, "five\n")
	out, errOut, code = runAirlock(t, env, root, "ledger", "verify", "--store", url)
	if code != exitBroken {
		t.Fatalf("verify of a ledger stream made again exited %d, want %d:\n%s%s", code, exitBroken, out, errOut)
	}
	mustContain(t, "verify --store", out+errOut, "cut: the ledger was rewritten from its first record, or is not the one target local:"+repo+" knows",
		"nats stream backup airlock_ledger")
}

// The ledger commands' --store is checked as serve's: a URL that is not
// NATS's and --file beside --store are usage errors; a prefix no server
// wrote is said so, with what to check.
func TestFleetLedgerCommandErrors(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	root := t.TempDir()
	env := isolatedEnv(t, root)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"ledger", "verify", "--store", "http://x:1"}, exitUsage, "not a NATS server's URL"},
		{[]string{"ledger", "show", "--store", srv.ClientURL(), "--file", "x.jsonl"}, exitUsage, "--file and --store name two ledgers: give one"},
		{[]string{"ledger", "verify", "--store", srv.ClientURL(), "--nats-prefix", "nobody"}, 1, "no ledger stream nobody_ledger at "},
	} {
		out, errOut, code := runAirlock(t, env, root, c.args...)
		if code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("airlock %s exited %d, want %d saying %q:\n%s%s", strings.Join(c.args, " "), code, c.code, c.says, out, errOut)
		}
	}
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
