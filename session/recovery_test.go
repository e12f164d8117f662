package session_test

import (
	"testing"

	"github.com/airlock-dev/airlock/session/recoverytest"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/files"
)

// TestRecoveryConformance runs the recovery suite over the local store.
func TestRecoveryConformance(t *testing.T) {
	recoverytest.Suite(t, func(t *testing.T) store.Store { return files.Store{Root: t.TempDir()} })
}
