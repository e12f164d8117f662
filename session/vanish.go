package session

import (
	"fmt"
)

// A durable session's files can be removed or replaced under its server
// (an rm -rf of the state directory, a restored backup, a link put in the
// directory's place). What is then written goes to files no path names,
// and a restart would find none of it. So after each save the session
// checks that its directory and journal are still the ones it writes
// (Lease.Here and Journal.Here; for the local store two lstat(2)s and
// two fstat(2)s, no read),
// and the sync loop checks once a second. When they are not, the
// directory is made again and the journal written again whole from
// memory before the call answers: nothing answered is lost. Where that
// cannot be done (a link or another file in the directory's place, a
// state directory that cannot be written), the save fails and says why:
// the call does not answer success.

// keepStateLocked makes the session's directory and journal again if
// they were removed or replaced; rewrote says it wrote the journal
// whole. It runs under s.mu.
func (s *Session) keepStateLocked() (rewrote bool, err error) {
	p := s.pst
	why := p.lease.Here()
	if why == nil {
		why = p.j.Here()
	}
	if why == nil {
		return false, nil
	}
	if err := p.lease.Remake(); err != nil {
		return false, fmt.Errorf("the session's state was removed or replaced under the server (%v), and it cannot be written again at %s: %w; until it can, a restart would lose what changed", why, p.lease.Where(), err)
	}
	if err := s.compactLocked(); err != nil {
		return false, fmt.Errorf("the session's state was removed or replaced under the server (%v), and writing it again failed: %w", why, err)
	}
	p.sumMu.Lock()
	p.sumDone, p.changed = false, true
	p.sumMu.Unlock()
	return true, nil
}

// keepState is keepStateLocked for the sync loop: it does nothing while
// the session is busy (its call's save checks), which also keeps the loop
// from waiting on a Close that waits for it.
func (s *Session) keepState() {
	if !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	if s.pst != nil {
		// Where it cannot be written again, the next save checks again
		// and the call that made it is told.
		_, _ = s.keepStateLocked()
	}
}
