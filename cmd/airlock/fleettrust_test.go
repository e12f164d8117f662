package main

import (
	"path/filepath"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/reviewkey"
)

// fleetTrust is what a test rig's airlock serve --store is given: the
// public key of the reviewer whose root (isolatedEnv's) is reviewerRoot,
// made there now as airlock review would on its first use, and
// --insecure-nats, as the rigs' NATS servers run without auth.
func fleetTrust(t testing.TB, reviewerRoot string) []string {
	t.Helper()
	kp, _, err := reviewkey.LoadOrCreate(filepath.Join(reviewerRoot, "state", "airlock", reviewkey.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--insecure-nats", "--reviewer-key", reviewkey.Public(kp)}
}

// reviewerKeyOf is the key of the reviewer whose root is root (made by
// fleetTrust, or by airlock review).
func reviewerKeyOf(t testing.TB, root string) (nkeys.KeyPair, error) {
	t.Helper()
	return reviewkey.Load(filepath.Join(root, "state", "airlock", reviewkey.FileName))
}

// signAs makes rv sign its decisions with the key of the reviewer whose
// root is root, as airlock review does with its own.
func signAs(t testing.TB, rv *broker.Reviewer, root string) {
	t.Helper()
	key, err := reviewerKeyOf(t, root)
	if err != nil {
		t.Fatal(err)
	}
	rv.SetKey(key)
}
