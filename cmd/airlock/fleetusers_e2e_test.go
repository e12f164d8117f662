//go:build unix

package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/internal/natsconn"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// TestFleetUsersLeastPrivilege: the NATS of examples/fleet, its users and
// permissions as docs/fleet.md gives them (read by nats-server's own
// parser), with a real airlock serve --store under the servers' user and
// a real airlock review --store under the reviewers': the push goes
// through the queue and lands. Then, as each user directly: the servers'
// cannot write, delete, purge or reconfigure a decision; the reviewers'
// cannot write a session's journal, a session, a lease, the ledger or a
// decision's outcome, nor make a stream. Nothing of either lands.
func TestFleetUsersLeastPrivilege(t *testing.T) {
	const pw = "least-privilege-"
	t.Setenv("AIRLOCK_NATS_PASSWORD", pw+"admin")
	t.Setenv("AIRLOCK_NATS_SERVER_PASSWORD", pw+"server")
	t.Setenv("AIRLOCK_NATS_REVIEWER_PASSWORD", pw+"reviewer")
	ns := natstest.FromConfig(t, filepath.Join("..", "..", "examples", "fleet", "nats", "nats-1.conf"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newQueueRigOn(t, ns.ClientURL())
	f.admin = []nats.Option{nats.UserInfo("airlock", pw+"admin")}
	f.env = append(f.env, natsconn.EnvUser+"=airlock-server", natsconn.EnvPassword+"="+pw+"server")
	f.trust = []string{"--reviewer-key", fleetTrust(t, f.reviewerRoot)[2]} // no --insecure-nats: users
	d := f.serve(ctx, "--ephemeral")
	push := f.ask(d)
	rv := startReview(t, f.bin, append(isolatedEnv(t, f.reviewerRoot), natsconn.EnvUser+"=airlock-reviewer", natsconn.EnvPassword+"="+pw+"reviewer"),
		f.reviewerRoot, "--store", f.store)
	const within = 20 * time.Second
	at := rv.Screen.WaitFor(t, 0, "[?]help", within)
	rv.Press(t, "a")
	rv.Screen.WaitFor(t, at, "Approved; the push goes ahead.", within)
	if r := awaitPush(t, push, rv.Screen); r.isErr {
		t.Fatalf("the push: %s", r.text)
	}
	if got := mustGit(t, f.env, f.repo, "show", "agent:notes/fleet.md"); got != "reviewed from afar\n" {
		t.Errorf("the target's agent branch: %q", got)
	}
	rv.Press(t, "\x03")
	rv.Wait(t, within)

	as := func(user, pass string) jetstream.JetStream {
		nc, err := nats.Connect(f.store, nats.UserInfo(user, pass))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	try := func(who, what string, do func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := do(ctx); err == nil {
			t.Errorf("%s could %s", who, what)
		}
	}
	server := as("airlock-server", pw+"server")
	decisions, err := server.KeyValue(ctx, "airlock_reviews_decisions") // reading is the server's job
	if err != nil {
		t.Fatalf("the servers' user cannot read the decisions bucket: %v", err)
	}
	try("the servers' user", "write a decision", func(ctx context.Context) error {
		_, err := decisions.Put(ctx, "req-forged", []byte(`{"nonce":"n"}`))
		return err
	})
	try("the servers' user", "delete a decision", func(ctx context.Context) error { return decisions.Delete(ctx, "req-forged") })
	try("the servers' user", "purge the decisions", func(ctx context.Context) error {
		st, err := server.Stream(ctx, "KV_airlock_reviews_decisions")
		if err != nil {
			return err
		}
		return st.Purge(ctx)
	})
	try("the servers' user", "delete the decisions bucket", func(ctx context.Context) error {
		return server.DeleteStream(ctx, "KV_airlock_reviews_decisions")
	})
	try("the servers' user", "reconfigure the decisions bucket", func(ctx context.Context) error {
		_, err := server.UpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "airlock_reviews_decisions", History: 5})
		return err
	})

	reviewer := as("airlock-reviewer", pw+"reviewer")
	for _, subj := range []string{"airlock.journal.forged.1", "airlock.ledger", "$KV.airlock_sessions.meta.forged",
		"$KV.airlock_leases.forged", "$KV.airlock_reviews.open.req-forged", "$KV.airlock_reviews_outcomes.req-forged.n"} {
		try("the reviewers' user", "publish to "+subj, func(ctx context.Context) error {
			_, err := reviewer.Publish(ctx, subj, []byte(`{}`))
			return err
		})
	}
	try("the reviewers' user", "make a stream", func(ctx context.Context) error {
		_, err := reviewer.CreateStream(ctx, jetstream.StreamConfig{Name: "forged", Subjects: []string{"forged.>"}})
		return err
	})
	try("the reviewers' user", "read the sessions", func(ctx context.Context) error {
		_, err := reviewer.KeyValue(ctx, "airlock_sessions")
		return err
	})

	// What the operator's user sees: none of it landed.
	admin := as("airlock", pw+"admin")
	if kv, err := admin.KeyValue(ctx, "airlock_reviews_decisions"); err != nil {
		t.Fatal(err)
	} else if _, err := kv.Get(ctx, "req-forged"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("the servers' user wrote a decision: %v", err)
	}
	for stream, subj := range map[string]string{"airlock_journal": "airlock.journal.forged.1", "KV_airlock_sessions": "$KV.airlock_sessions.meta.forged",
		"KV_airlock_reviews_outcomes": "$KV.airlock_reviews_outcomes.req-forged.n"} {
		st, err := admin.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.GetLastMsgForSubject(ctx, subj); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("the reviewers' user wrote %s: %v", subj, err)
		}
	}
}
