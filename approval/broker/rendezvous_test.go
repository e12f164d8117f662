package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval/broker"
)

// A server started by a client that drops or changes XDG_RUNTIME_DIR,
// XDG_STATE_HOME and HOME (Codex, the TypeScript SDK) and a reviewer in a
// terminal that has them compute the same socket directory and ledger.
func TestRendezvousIgnoresTheClientsEnvironment(t *testing.T) {
	t.Setenv("AIRLOCK_RUNTIME_DIR", "")
	t.Setenv("AIRLOCK_STATE_DIR", "")
	os.Unsetenv("AIRLOCK_RUNTIME_DIR")
	os.Unsetenv("AIRLOCK_STATE_DIR")
	var sockets, states []string
	for _, env := range []map[string]string{
		{"XDG_RUNTIME_DIR": "", "XDG_STATE_HOME": "", "HOME": ""},
		{"XDG_RUNTIME_DIR": t.TempDir(), "XDG_STATE_HOME": t.TempDir(), "HOME": t.TempDir()},
	} {
		for k, v := range env {
			t.Setenv(k, v)
			if v == "" {
				os.Unsetenv(k)
			}
		}
		s, err := broker.SocketDir()
		if err != nil {
			t.Fatal(err)
		}
		st, err := broker.StateDir()
		if err != nil {
			t.Fatal(err)
		}
		sockets, states = append(sockets, s), append(states, st)
	}
	if sockets[0] != sockets[1] || states[0] != states[1] {
		t.Fatalf("the two sides disagree: sockets %v, state %v", sockets, states)
	}
	if !strings.HasSuffix(states[0], filepath.Join(".local", "state", "airlock")) {
		t.Errorf("state directory %s", states[0])
	}
	// An explicit setting moves both, for whoever sets it on both sides.
	d := t.TempDir()
	t.Setenv("AIRLOCK_RUNTIME_DIR", d)
	t.Setenv("AIRLOCK_STATE_DIR", filepath.Join(d, "state"))
	if s, _ := broker.SocketDir(); s != filepath.Join(d, "airlock") {
		t.Errorf("AIRLOCK_RUNTIME_DIR: %s", s)
	}
	if s, _ := broker.StateDir(); s != filepath.Join(d, "state") {
		t.Errorf("AIRLOCK_STATE_DIR: %s", s)
	}
}
