package approval_test

import (
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/approval/ledger"
)

func newLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "state", "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
