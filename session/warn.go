package session

import (
	"fmt"
	"os"

	"github.com/airlock-dev/airlock/internal/termsafe"
)

// warn tells the operator of a failure on a durability path that no
// call's answer carries (Options.Warn, or stderr). The message may hold
// strings a worker or a repository supplied, so it is sanitised.
func (s *Session) warn(format string, args ...any) {
	msg := termsafe.Line(fmt.Sprintf(format, args...))
	if s.opts.Warn != nil {
		s.opts.Warn(msg)
		return
	}
	fmt.Fprintf(os.Stderr, "airlock: session %s: %s\n", s.id, msg)
}

// saveOrWarnLocked saves, and tells the operator when the save fails
// where no call is waiting to report it (the next call's save tries
// again, and reports to the worker if it fails too).
func (s *Session) saveOrWarnLocked(what string) {
	if err := s.saveLocked(); err != nil {
		s.warn("saving the session %s failed: %v; the next call saves again and tells the worker if it still fails", what, err)
	}
}
