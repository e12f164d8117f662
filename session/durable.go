package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session/record"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/worker"
)

// syncEvery is how often a durable session flushes its journal to the
// disk and rewrites its summary. A call is durable against a killed
// process once its batch is written; this is for a machine that stops.
const syncEvery = time.Second

// Save writes what changed since the last save to the session's state
// directory; a session in memory only has nothing to do. The tool surface
// calls it after every call, before the answer: an answered call is
// durable.
func (s *Session) Save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveLocked()
}

// FlushErr returns, once, a flush of the journal to the disk that failed
// since the last call of it (the sync loop's fsync, about once a second):
// calls answered meanwhile survive the server's end but maybe not the
// machine's. Nil for a session in memory.
func (s *Session) FlushErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pst == nil {
		return nil
	}
	return s.pst.takeSyncErr()
}

// Dropped reports whether Close removed the session's state directory
// because the session changed nothing (Options.DropUnchanged).
func (s *Session) Dropped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Recovered is what the session found when it resumed; nil for a session
// that started afresh.
func (s *Session) Recovered() *Recovered { return s.recovered }

// Durable reports whether the session is saved to a store, and where.
func (s *Session) Durable() (store.Lease, bool) {
	if s.pst == nil {
		return nil, false
	}
	return s.pst.lease, true
}

// noLease is o.State, or nil: a nil *StateDir (a caller's "none") is
// none.
func noLease(l store.Lease) store.Lease {
	if d, ok := l.(*StateDir); ok && d == nil {
		return nil
	}
	return l
}

// localStateDir is the directory of a session the local store keeps; ""
// for one in memory or in another store.
func (s *Session) localStateDir() string {
	if d, ok := s.opts.State.(*StateDir); ok {
		return d.Path
	}
	return ""
}

// newPersister is the persister of a session held by lease, its journal
// j, the record writer w.
func (s *Session) newPersister(lease store.Lease, j store.Journal, w *record.Writer) *persister {
	return &persister{lease: lease, j: j, w: w, stop: make(chan struct{}), stopped: make(chan struct{}), poke: make(chan chan struct{}),
		summarize: s.summarize, keep: s.keepState, warn: s.warn}
}

// startSaving opens the journal of lease for a new session, whose state
// is in memory, and writes it whole.
func (s *Session) startSaving(lease store.Lease) error {
	j, err := lease.OpenJournal(record.IsCommit, func(byte, []byte) error { return nil })
	if err != nil {
		return err
	}
	p := s.newPersister(lease, j, record.NewWriter())
	s.pst = p
	if err := s.compactLocked(); err != nil {
		s.pst = nil
		_ = p.j.Close() // the rewrite failed: the error is err
		return err
	}
	p.started = p.w.Seq()
	go p.syncLoop()
	return nil
}

func (p *persister) syncLoop() {
	defer close(p.stopped)
	t := time.NewTicker(syncEvery)
	defer t.Stop()
	for {
		var done chan struct{}
		select {
		case <-p.stop:
			return
		case <-t.C:
		case done = <-p.poke:
		}
		p.tick()
		if done != nil {
			close(done)
		}
	}
}

// tick is the sync loop's work: the state kept where it belongs, the
// journal flushed, the summary counted and written.
func (p *persister) tick() {
	p.keep()
	if err := p.j.Sync(); err != nil {
		p.noteSyncErr(err)
	}
	p.sumMu.Lock()
	changed := p.changed
	p.sumMu.Unlock()
	if changed {
		if sum, ok := p.summarize(); ok {
			p.setSummary(sum)
		}
	}
	p.writeSummary()
}

// noteSyncErr keeps a failed flush for the next call to report, and tells
// the operator when it is the first since the last one was reported.
func (p *persister) noteSyncErr(err error) {
	p.sumMu.Lock()
	first := p.syncErr == nil
	p.syncErr = err
	p.sumMu.Unlock()
	if first {
		p.warn("flushing the journal to disk failed: %v; calls answered since the last flush survive the server's end, not the machine's", err)
	}
}

// takeSyncErr returns (once) a flush that failed since the last call.
func (p *persister) takeSyncErr() error {
	p.sumMu.Lock()
	defer p.sumMu.Unlock()
	err := p.syncErr
	p.syncErr = nil
	if err == nil {
		return nil
	}
	return fmt.Errorf("the journal could not be flushed to disk (%w), so what was answered lately survives a crash of the server but not of the machine", err)
}

// touch notes a save: the summary is counted again within a second.
func (p *persister) touch() {
	p.sumMu.Lock()
	p.changed = true
	p.sumMu.Unlock()
}

func (p *persister) setSummary(sum Summary) {
	p.sumMu.Lock()
	defer p.sumMu.Unlock()
	sum.Updated = time.Now().UTC()
	sum.Bytes = p.j.Size()
	p.summary, p.sumDone, p.changed = sum, false, false
}

// summarize counts the session's state for its summary; ok is false when
// the session is busy (the next tick counts), which also keeps the sync
// loop from waiting on a Close that waits for it.
func (s *Session) summarize() (Summary, bool) {
	if !s.mu.TryLock() {
		return Summary{}, false
	}
	defer s.mu.Unlock()
	return s.summaryLocked(), true
}

func (p *persister) writeSummary() {
	p.sumMu.Lock()
	defer p.sumMu.Unlock()
	if p.sumDone {
		return
	}
	if p.lease.WriteSummary(p.summary) == nil {
		p.sumDone = true
	}
}

func (s *Session) summaryLocked() Summary {
	changed, staged := s.changesLocked()
	return Summary{Changed: len(changed), Staged: len(staged), Checkpoints: len(s.ws.CheckpointNames()), Pending: s.pushes.PendingLocked()}
}

// changesLocked is every repository's unstaged changes (workspace paths)
// and staged commits.
func (s *Session) changesLocked() ([]memfs.Change, []*staging.Commit) {
	var changed []memfs.Change
	var staged []*staging.Commit
	for _, r := range s.repos {
		st := r.area.Status()
		for _, c := range st.Unstaged {
			c.Path = r.path(c.Path)
			changed = append(changed, c)
		}
		staged = append(staged, st.Staged...)
	}
	return changed, staged
}

// closeSavingLocked saves, flushes and closes the journal and releases the
// state directory.
func (s *Session) closeSavingLocked() {
	p := s.pst
	// No call waits for these: the operator is told.
	s.saveOrWarnLocked("as it closed")
	close(p.stop)
	<-p.stopped
	if s.opts.DropUnchanged && p.started != 0 && p.w.Seq() == p.started && s.pushes.InFlightLocked() == 0 {
		// Nothing was ever saved after the start: no work to keep. It
		// goes while its lock is held, so no other server takes it up.
		_ = p.j.Close() // it holds nothing to keep: its directory goes next
		if p.lease.Remove() == nil {
			s.dropped = true
		}
		p.lease.Unlock()
		s.pst = nil
		return
	}
	sum := s.summaryLocked()
	sum.Closed = true
	p.setSummary(sum)
	if err := p.j.Close(); err != nil {
		s.warn("closing the journal failed: %v; what it flushed last is what a resume finds", err)
	}
	p.writeSummary()
	p.lease.Unlock()
	s.pst = nil
}

// Resume rebuilds a session from its state directory (opts.State): the
// workspace, checkpoints, staged commits and pushes as the last answered
// call left them. auto_pull does not run again. A push that was waiting
// for a reviewer is offered again under its request id; one a crash cut
// while it landed is recorded as pushed when its branch has the commit,
// as failed otherwise. It fails with errNoState (wrapped) when the
// journal holds nothing: the caller should start the session afresh.
func Resume(ctx context.Context, w *worker.Worker, opts Options) (*Session, *Recovered, error) {
	if opts.State = noLease(opts.State); opts.State == nil {
		return nil, nil, errors.New("session: Resume needs a state directory")
	}
	id := opts.State.SessionID()
	s, err := newSession(w, opts)
	if err != nil {
		return nil, nil, err
	}
	l := record.NewLoaded(s.ws, s.store)
	j, err := opts.State.OpenJournal(record.IsCommit, l.Record)
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: %w", id, err)
	}
	fail := func(err error) (*Session, *Recovered, error) {
		_ = j.Close() // nothing was written to it
		return nil, nil, fmt.Errorf("session %s: resuming: %w", id, err)
	}
	if l.Empty() {
		_ = j.Close() // nothing was written to it
		return nil, nil, fmt.Errorf("session %s: %w", id, errNoState)
	}
	sess, err := decodeSess(l)
	if err != nil {
		return fail(err)
	}
	// Lazy files read from where they were pulled: those repositories
	// are opened again before anything can read one.
	notes := attachSources(ctx, s.store, sess.Sources)
	if err := s.restore(l, sess); err != nil {
		return fail(err)
	}
	if s.run != nil {
		s.run.Resume(s.runsDir())
	}
	// The targets of the pushes in flight are opened before the lock is
	// taken, as every call opens them (Session.openMu).
	pre := s.preopenPushes(ctx, sess.Pushes)
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.stateLocked()
	if err != nil {
		return fail(err)
	}
	p := s.newPersister(opts.State, j, record.ResumeWriter(l, st))
	p.compacted = j.Size() / 2
	s.pst = p
	rec := &Recovered{ID: id, Checkpoints: nil, Ended: notes}
	ended, waiting := s.pushes.ResumeLocked(ctx, sess.Pushes, pre.target)
	rec.Ended, rec.Waiting = append(rec.Ended, ended...), waiting
	p.w.ForgetSess() // the pushes may have changed: the next save writes the record
	if err := s.saveLocked(); err != nil {
		s.pst = nil
		return fail(err)
	}
	go p.syncLoop()
	rec.Changed, rec.Staged = s.changesLocked()
	rec.Checkpoints = s.ws.CheckpointNames()
	p.setSummary(s.summaryLocked())
	rec.Saved = l.Saved()
	s.recovered = rec
	return s, rec, nil
}

// restore installs a loaded journal's state in a new, empty session.
func (s *Session) restore(l *record.Loaded, sess sessRec) error {
	saved := l.Repos()
	var want []string
	for _, r := range s.repos {
		want = append(want, r.name)
	}
	if !slices.Equal(saved, want) {
		return fmt.Errorf("the session was saved with the repositories %s, and the worker file now names %s: start a new session (airlock serve --new), or restore the worker file",
			repoListing(saved), repoListing(want))
	}
	rs, err := l.Restore(want)
	if err != nil {
		return err
	}
	// The objects the session needs go into its store; what only the
	// workspace needs lives in its snapshots.
	roots := append(rs.Roots, sess.roots()...)
	err = rs.Objects.Walk(roots, func(plumbing.Hash, bool) bool { return false }, func(o plumbing.EncodedObject, _ bool) error {
		_, err := s.store.SetEncodedObject(o)
		return err
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.repos {
		if err := r.area.Resume(rs.Areas[k]); err != nil {
			return r.wrap(err)
		}
	}
	if err := s.ws.Resume(rs.Live, rs.Cps); err != nil {
		return err
	}
	s.restoreSessLocked(sess)
	return nil
}

// roots are the objects the session's own record names: its checkpoints'
// bases and its pushes' commits.
func (r sessRec) roots() []plumbing.Hash {
	var roots []plumbing.Hash
	for _, rr := range r.repoRecs() {
		for _, b := range rr.Cps {
			for _, x := range b {
				if h, err := hashOf(x); err == nil {
					roots = append(roots, h)
				}
			}
		}
	}
	for _, pr := range r.Pushes {
		for _, x := range []string{pr.Commit, pr.Old} {
			if h, err := hashOf(x); err == nil {
				roots = append(roots, h)
			}
		}
	}
	for _, sn := range r.Seen {
		if h, err := hashOf(sn.Tree); err == nil {
			roots = append(roots, h)
		}
	}
	return roots
}

// restoreSessLocked installs the session's own record: what was
// published, and each repository's base and checkpoints' bases.
func (s *Session) restoreSessLocked(sess sessRec) {
	s.pushes.RestoreSeenLocked(sess.Seen)
	s.pushes.RestoreOpenLocked(sess.Comments)
	for hx, where := range sess.Published {
		if h, err := hashOf(hx); err == nil {
			s.pushes.PublishedLocked()[h] = where
		}
	}
	repoRecs := sess.repoRecs()
	for _, r := range s.repos {
		rr := repoRecs[r.name]
		r.base, r.baseRef = rr.Base, rr.BaseRef
		for name, b := range rr.Cps {
			var hs [4]plumbing.Hash
			for i, x := range b {
				hs[i], _ = hashOf(x)
			}
			if s.cps[name] == nil {
				s.cps[name] = map[string]cpBase{}
			}
			s.cps[name][r.name] = cpBase{base: hs[0], baseView: hs[1], tip: hs[2], view: hs[3]}
		}
	}
}

// repoRecs is the record's repositories, a single-repository session's
// under "".
func (r sessRec) repoRecs() map[string]repoRec {
	if r.Repos != nil {
		return r.Repos
	}
	return map[string]repoRec{"": {Base: r.Base, BaseRef: r.BaseRef, Cps: r.Cps}}
}

func repoListing(names []string) string {
	if len(names) == 1 && names[0] == "" {
		return "(one, the whole workspace)"
	}
	return strings.Join(names, ", ")
}
