package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/airlock-dev/airlock/internal/natsconn"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// serve's fleet flags: what each refuses, and that --http leaves
// loopback only with --store (and a reachable --advertise).
func TestServeFleetFlags(t *testing.T) {
	ns := natstest.Server(t, natstest.Options{})
	url := ns.ClientURL()
	for _, tc := range []struct {
		args []string
		want string // in the error; "" for none
	}{
		{[]string{"--http", "127.0.0.1:0", "--advertise", "http://10.0.0.5:8787"}, "give it with --store and --http"},
		{[]string{"--store", url, "--advertise", "http://10.0.0.5:8787"}, "give it with --store and --http"},
		{[]string{"--store", url, "--http", "10.0.0.5:0", "--advertise", "10.0.0.5:8787"}, "give a URL such as"},
		{[]string{"--store", url, "--lease-ttl", "10ms"}, "give 100ms or more"},
		{[]string{"--store", url, "--http", "10.0.0.5:0", "--advertise", "http://10.0.0.5:8787", "--lease-ttl", "2s"}, "needs --reviewer-key"},
		{[]string{"--store", url, "--http", "10.0.0.5:0", "--advertise", "http://10.0.0.5:8787", "--lease-ttl", "2s", "--reviewer-key", "UX"}, ""},
		{[]string{"--insecure-nats"}, "--insecure-nats is for a NATS store"},
	} {
		_, err := parseServe(append(tc.args, "--run", "off"), io.Discard)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	nc := natstest.Connect(t, url)
	for _, tc := range []struct {
		addr, advertise string
		fleet           bool
		want            string
	}{
		{"10.0.0.5:8787", "", false, "only a loopback address"},
		{"10.0.0.5:8787", "", true, ""},
		{"0.0.0.0:8787", "", true, "give --advertise"},
		{":8787", "", true, "give --advertise"},
		{"0.0.0.0:8787", "http://10.0.0.5:8787", true, ""},
	} {
		sv := &served{f: &serveFlags{httpAddr: tc.addr, move: moveFlags{advertise: tc.advertise}}}
		if tc.fleet {
			sv.nc = nc
		}
		err := sv.httpDoor()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("--http %s --advertise %q (fleet %v): %v, want %q", tc.addr, tc.advertise, tc.fleet, err, tc.want)
		}
	}
}

// TestServeRefusesNATSWithoutCredentials: airlock serve --store refuses a
// NATS that lets it in without credentials, saying what to give, unless
// --insecure-nats; and a --reviewer-key that is not a public key (a seed)
// is refused without echoing it.
func TestServeRefusesNATSWithoutCredentials(t *testing.T) {
	requireGit(t)
	ns := natstest.Server(t, natstest.Options{})
	root := t.TempDir()
	env := isolatedEnv(t, root)
	repo := filepath.Join(root, "project")
	initRepo(t, env, repo, map[string]string{"README.md": "# P\n"})
	key := fleetTrust(t, root)[2]
	out, errOut, code := runAirlock(t, env, repo, "serve", "--run", "off", "--store", ns.ClientURL(), "--reviewer-key", key)
	if code != exitUsage {
		t.Fatalf("serve --store on a NATS without auth exited %d:\n%s%s", code, out, errOut)
	}
	mustContain(t, "serve's refusal", errOut, "without credentials", "--nats-creds", "AIRLOCK_NATS_USER", "pass --insecure-nats")
	// Credentials given to such a NATS prove nothing:
	// TestServeRefusesAnOpenNATSWhateverCredentialsItGives.
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	_, errOut, code = runAirlock(t, env, repo, "serve", "--run", "off", "--store", ns.ClientURL(), "--reviewer-key", string(seed), "--insecure-nats")
	if code != exitUsage || strings.Contains(errOut, string(seed)) || !strings.Contains(errOut, "a seed") {
		t.Fatalf("a seed as --reviewer-key: exit %d:\n%s", code, errOut)
	}
	_, errOut, code = runAirlock(t, env, repo, "serve", "--run", "off", "--store", ns.ClientURL())
	if code != exitUsage || !strings.Contains(errOut, "airlock review --print-key") {
		t.Fatalf("serve --store without --reviewer-key: exit %d:\n%s", code, errOut)
	}
}

// TestServeRefusesAnOpenNATSWhateverCredentialsItGives: a NATS that asks
// for no credentials lets anyone in, even when this server came with a
// user and password (or a token in the URL) that the NATS never needed:
// the operator who set AIRLOCK_NATS_USER but started nats-server -js
// without its users was not told, and everyone who reached the NATS could
// write the fleet's journals and queue.
func TestServeRefusesAnOpenNATSWhateverCredentialsItGives(t *testing.T) {
	requireGit(t)
	ns := natstest.Server(t, natstest.Options{})
	root := t.TempDir()
	repo := filepath.Join(root, "project")
	key := fleetTrust(t, root)[2]
	withUser := append(isolatedEnv(t, root), natsconn.EnvUser+"=airlock-server", natsconn.EnvPassword+"=not-needed")
	initRepo(t, withUser, repo, map[string]string{"README.md": "# P\n"})
	tokenURL := strings.Replace(ns.ClientURL(), "nats://", "nats://not-needed@", 1)
	for _, c := range []struct {
		name  string
		env   []string
		store string
	}{{"a user and password", withUser, ns.ClientURL()}, {"a token in the URL", isolatedEnv(t, root), tokenURL}} {
		out, errOut, code := runAirlock(t, c.env, repo, "serve", "--run", "off", "--store", c.store, "--reviewer-key", key)
		if code != exitUsage {
			t.Errorf("serve --store with %s, on a NATS that asks for none, exited %d:\n%s%s", c.name, code, out, errOut)
			continue
		}
		mustContain(t, "serve's refusal", errOut, "asks for no credentials", "pass --insecure-nats")
	}
}
