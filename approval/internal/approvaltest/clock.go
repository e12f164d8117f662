package approvaltest

import (
	"sync"
	"time"
)

// Clock is the wall clock, except that each reading is later than the one
// before (by a millisecond where the wall clock has not moved on): gates
// sharing it give requests made in a row distinct times, in order, with
// no sleep, and the times stay the real ones a screen shows ages from.
type Clock struct {
	mu   sync.Mutex
	last time.Time
}

// Now is the next reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := time.Now()
	if !t.After(c.last) {
		t = c.last.Add(time.Millisecond)
	}
	c.last = t
	return t
}
