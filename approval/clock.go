package approval

import "time"

// SetClock makes g read the time from now instead of time.Now: the times
// of its requests and decisions. A test gives the gates it runs one clock
// whose every reading is later than the last, so that requests made in a
// row are ordered by time without sleeping between them. Call it before
// g is used.
func (g *Gate) SetClock(now func() time.Time) { g.now = now }
