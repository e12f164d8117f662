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
		p.dir.Unlock()
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
