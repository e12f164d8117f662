package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/reviewkey"
)

// airlock ledger show marks a refused decision as it marks a cut: the
// request, who it claims to be by, the key, where it came from and why.
func TestLedgerShowsARefusedDecision(t *testing.T) {
	data, _ := json.Marshal(map[string]any{"request": "req-1", "verdict": "approve", "by": "mallory", "key": "UKEY",
		"from": "the fleet's queue", "why": "it is not signed"})
	line := describeRecord(ledger.Record{Seq: 7, Kind: ledger.KindRefused, Time: time.Now(), Data: data})
	for _, want := range []string{"req-1", "!!", "approve decision refused", `"mallory"`, "UKEY", "the fleet's queue", "it is not signed"} {
		if !strings.Contains(line, want) {
			t.Errorf("the line %q lacks %q", line, want)
		}
	}
}

// airlock review --print-key makes the reviewer's key on first use (mode
// 0600, in the state directory), prints the same public key every time,
// needs no terminal, and refuses a key file others may read.
func TestReviewPrintKey(t *testing.T) {
	root := t.TempDir()
	env := isolatedEnv(t, root)
	out, errOut, code := runAirlock(t, env, root, "review", "--print-key")
	key := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key, "U") || len(key) != 56 || !strings.Contains(errOut, "made a new reviewer key") {
		t.Fatalf("review --print-key: exit %d, %q\n%s", code, out, errOut)
	}
	path := filepath.Join(root, "state", "airlock", reviewkey.FileName)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key's file: %v", err)
	}
	if again, _, _ := runAirlock(t, env, root, "review", "--print-key"); strings.TrimSpace(again) != key {
		t.Fatalf("a second --print-key printed %q, want %q", again, key)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runAirlock(t, env, root, "review", "--print-key")
	if code == 0 || !strings.Contains(errOut, "chmod 600") {
		t.Fatalf("a key others may read: exit %d\n%s", code, errOut)
	}
}
