package session_test

import (
	"os"
	"testing"

	"github.com/airlock-dev/airlock/sandbox"
)

// TestMain lets this test binary be the sandbox's helper, as airlock's own
// binary is.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}
