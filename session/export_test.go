package session

// Crash abandons s as a killed process would: nothing more is saved or
// flushed, and its state directory's lock is released (the kernel drops
// a dead process's flock).
func Crash(s *Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pst; p != nil {
		close(p.stop)
		<-p.stopped
		p.j.Close()
		p.lease.Unlock()
		s.pst = nil
	}
}

// BreakJournal makes every later save of s fail, as a journal that can no
// longer be written does: its file is closed under it (Write answers
// "journal: closed"); the state directory keeps what was saved before.
func BreakJournal(s *Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pst.j.Close()
}

// FailFlush has s's sync loop meet err, as a failed fsync of its journal.
func FailFlush(s *Session, err error) {
	s.mu.Lock()
	p := s.pst
	s.mu.Unlock()
	p.noteSyncErr(err)
}

// SyncNow runs s's sync loop's work (state kept, journal flushed, summary
// written) now, and returns when it is done.
func SyncNow(s *Session) {
	s.mu.Lock()
	p := s.pst
	s.mu.Unlock()
	done := make(chan struct{})
	p.poke <- done
	<-done
}
