package natsqueue

import "time"

// SetResync sets how often publishers check the queue against their gate,
// for the test; it returns what puts it back.
func SetResync(d time.Duration) func() {
	old := resync
	resync = d
	return func() { resync = old }
}
