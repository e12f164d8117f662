package ledger_test

import (
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/approval/ledger/ledgertest"
)

// fileStore is a ledger file in a test's directory.
type fileStore struct{ path string }

func (s fileStore) Open(t testing.TB) approval.Ledger {
	t.Helper()
	l, err := ledger.Open(s.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func (s fileStore) Verify(t testing.TB) ledger.Report {
	t.Helper()
	rep, err := ledger.Verify(s.path)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// The file ledger keeps what approval.Ledger promises (the NATS ledger
// runs the same suite).
func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ledgertest.Store {
		return fileStore{filepath.Join(t.TempDir(), "state", "ledger.jsonl")}
	})
}
