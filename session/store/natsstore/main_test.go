package natsstore

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/natstest"
)

// TestMain lets natstest.Process run this test binary again as a NATS
// server (a node killed with SIGKILL, a server out of the process).
func TestMain(m *testing.M) { natstest.Main(m) }
