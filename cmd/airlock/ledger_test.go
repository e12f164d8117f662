package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
)

// A failed push's error, a reviewer's reason or a path in the ledger
// cannot put escape sequences on the terminal of whoever reads it.
func TestLedgerShowIsSanitised(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := approval.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(approval.KindPush, map[string]string{"request": "r1", "result": "failed", "target": "local:/p", "ref": "refs/heads/main",
		"new": "abc", "error": "git: \x1b[2J\x1b]52;c;ZXZpbA==\x07fake\u202Eok"})
	l.Close()
	var out, errOut bytes.Buffer
	if code := run([]string{"ledger", "show", "--file", path}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if strings.ContainsAny(out.String(), "\x1b\x07\u202e") || !strings.Contains(out.String(), "^[[2J^[]52;c;ZXZpbA==^Gfake<U+202E>ok") {
		t.Errorf("ledger show printed %q", out.String())
	}
}
