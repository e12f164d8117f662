package session

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/staging"
)

// collectLocked drops the objects nothing the session knows reaches: the
// roots are the base, the staged chain (the area's), the pushes in flight
// (their commits and the target heads their requests compare with), and
// the checkpoints' bases. Every writer of the store holds s.mu, so no
// object can be half-way to a root while this runs.
func (s *Session) collectLocked() staging.Collected {
	return s.store.Collect(s.rootsLocked()...)
}

// rootsLocked is what the store must keep: every repository's area, the
// pushes in flight and the checkpoints' bases.
func (s *Session) rootsLocked() []plumbing.Hash {
	var roots []plumbing.Hash
	for _, r := range s.repos {
		roots = append(roots, r.area.Roots()...)
	}
	roots = append(roots, s.pushes.RootsLocked()...)
	for _, bases := range s.cps {
		for _, b := range bases {
			roots = append(roots, b.tip, b.view, b.baseView)
		}
	}
	return roots
}

// Collect drops what no root reaches and returns what it dropped. The
// session collects on its own after every change that can orphan objects;
// this is for tests and the operator.
func (s *Session) Collect() staging.Collected {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.collectLocked()
}

// Held is what the session holds: the object store's bytes and objects,
// and the workspace's held tally (live files, checkpoints, snapshots).
type Held struct {
	StoreBytes   int64
	StoreObjects int
	Workspace    int64
}

// Held reports what the session holds now.
func (s *Session) Held() Held {
	_, held := s.ws.Usage()
	return Held{StoreBytes: s.store.Bytes(), StoreObjects: s.store.Len(), Workspace: held.Bytes}
}

// Busy reports whether a push is in flight (waiting for a reviewer or on
// its way to a target), or whether the session holds changes it cannot
// save (its state directory is full or read-only): memory is then their
// only copy. A server keeps a busy session open; it asks without a lock
// of its own held (hub.Hub: Session.mu is taken after no other lock).
func (s *Session) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Saving is how to know: it writes nothing when all is saved. (A
	// server asks only of a session no call is running in, so what it
	// saves is whole calls.)
	return s.pushes.InFlightLocked() > 0 || s.saveLocked() != nil
}
