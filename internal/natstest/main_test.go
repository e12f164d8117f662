package natstest

import "testing"

// TestMain lets Process run this test binary again as a NATS server.
func TestMain(m *testing.M) { Main(m) }
