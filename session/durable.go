package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
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

// Durable reports whether the session is saved to a state directory, and
// which.
func (s *Session) Durable() (*StateDir, bool) {
	if s.pst == nil {
		return nil, false
	}
	return s.pst.dir, true
}

// startSaving opens the journal of dir for a session whose state is
// already in memory (l nil: a new session, written whole now).
func (s *Session) startSaving(dir *StateDir, j *journal.Journal) error {
	p := &persister{dir: dir, j: j, known: map[plumbing.Hash]uint8{}, commits: map[plumbing.Hash]*staging.Commit{},
		stop: make(chan struct{}), stopped: make(chan struct{}), summarize: s.summarize, keep: s.keepState, warn: s.warn}
	if j == nil {
		var err error
		p.j, err = journal.Open(dir.journalPath(), isState, func(byte, []byte) error { return nil })
		if err != nil {
			return err
		}
	}
	s.pst = p
	if err := s.compactLocked(); err != nil {
		s.pst = nil
		_ = p.j.Close() // the rewrite failed: the error is err
		return err
	}
	if j == nil {
		p.started = p.seq
	}
	go p.syncLoop()
	return nil
}

func (p *persister) syncLoop() {
	defer close(p.stopped)
	t := time.NewTicker(syncEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
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
	}
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
	if writeJSONAtomic(filepath.Join(p.dir.Path, "summary.json"), p.summary) == nil {
		p.sumDone = true
	}
}

func (s *Session) summaryLocked() Summary {
	n := 0
	for _, p := range s.pushes {
		if p.state == requested {
			n++
		}
	}
	changed, staged := s.changesLocked()
	return Summary{Changed: len(changed), Staged: len(staged), Checkpoints: len(s.ws.CheckpointNames()), Pending: n}
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
	if s.opts.DropUnchanged && p.started != 0 && p.seq == p.started && len(s.pushes) == 0 {
		// Nothing was ever saved after the start: no work to keep. It
		// goes while its lock is held, so no other server takes it up.
		_ = p.j.Close() // it holds nothing to keep: its directory goes next
		if os.RemoveAll(p.dir.Path) == nil {
			s.dropped = true
		}
		p.dir.Unlock()
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
	p.dir.Unlock()
	s.pst = nil
}

// Recovered is what a resumed session found in its state directory.
type Recovered struct {
	ID          string
	Saved       time.Time // when the last call was saved
	Changed     []memfs.Change
	Staged      []*staging.Commit
	Checkpoints []string
	// Waiting lists the pushes offered to reviewers again, by request id.
	Waiting []string
	// Ended says what became of pushes a crash interrupted while they
	// were landing: found on their branch (pushed) or not (failed).
	Ended []string
}

// Text is the recovery as the worker is told it.
func (r *Recovered) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "This session (%s) was resumed after airlock restarted; nothing the sandbox answered before is lost. ", r.ID)
	fmt.Fprintf(&b, "%d file(s) changed and not staged", len(r.Changed))
	if len(r.Changed) > 0 {
		var ps []string
		for i, c := range r.Changed {
			if i == 10 {
				ps = append(ps, fmt.Sprintf("and %d more", len(r.Changed)-10))
				break
			}
			ps = append(ps, c.Path)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(ps, ", "))
	}
	fmt.Fprintf(&b, "; %d staged commit(s)", len(r.Staged))
	if len(r.Staged) > 0 {
		var ids []string
		for _, c := range r.Staged {
			ids = append(ids, shortid.Hash(c.ID))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(ids, ", "))
	}
	fmt.Fprintf(&b, "; %d checkpoint(s)", len(r.Checkpoints))
	if len(r.Waiting) > 0 {
		fmt.Fprintf(&b, "; pushes waiting for a reviewer again: %s (git_push the same commit to wait for the answer)", strings.Join(r.Waiting, ", "))
	}
	b.WriteString(".")
	for _, e := range r.Ended {
		b.WriteString(" " + e)
	}
	b.WriteString(" Call git_status for the details.")
	return b.String()
}

// attachSources opens the blob sources keys name (newest first) and adds
// them to store; it returns a sentence for each one that cannot be opened.
func attachSources(ctx context.Context, store *staging.Store, keys []string) []string {
	var notes []string
	for i := len(keys) - 1; i >= 0; i-- {
		src, err := targets.OpenSourceWith(ctx, keys[i], githubOptions())
		if err != nil {
			// Said to the operator (stderr) and the worker (the
			// instructions): each has a way out.
			notes = append(notes, fmt.Sprintf("Files of the base not read before the restart cannot be read now (%v): restore that repository and restart airlock serve, or git_pull the files from a target that has them.", err))
			continue
		}
		store.AddSource(keys[i], src)
	}
	return notes
}

// Resume rebuilds a session from its state directory (opts.State): the
// workspace, checkpoints, staged commits and pushes as the last answered
// call left them. auto_pull does not run again. A push that was waiting
// for a reviewer is offered again under its request id; one a crash cut
// while it landed is recorded as pushed when its branch has the commit,
// as failed otherwise. It fails with errNoState (wrapped) when the
// journal holds nothing: the caller should start the session afresh.
func Resume(ctx context.Context, w *Worker, opts Options) (*Session, *Recovered, error) {
	if opts.State == nil {
		return nil, nil, errors.New("session: Resume needs a state directory")
	}
	s, err := newSession(w, opts)
	if err != nil {
		return nil, nil, err
	}
	l := &loaded{ws: s.ws, ld: s.store, objs: map[plumbing.Hash]rawObject{}, commits: map[plumbing.Hash]*staging.Commit{}}
	j, err := journal.Open(opts.State.journalPath(), isState, l.record)
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: %w", opts.State.ID, err)
	}
	if l.seq == 0 || len(l.areas) == 0 {
		_ = j.Close() // nothing was written to it
		return nil, nil, fmt.Errorf("session %s: %w", opts.State.ID, errNoState)
	}
	fail := func(err error) (*Session, *Recovered, error) {
		_ = j.Close() // nothing was written to it
		return nil, nil, fmt.Errorf("session %s: resuming: %w", opts.State.ID, err)
	}
	// Lazy files read from where they were pulled: those repositories
	// are opened again before anything can read one.
	notes := attachSources(ctx, s.store, l.sess.Sources)
	if err := s.restore(l); err != nil {
		return fail(err)
	}
	if s.run != nil {
		s.run.resumeOutputs(s.runsDir())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &persister{dir: opts.State, j: j, known: map[plumbing.Hash]uint8{}, commits: map[plumbing.Hash]*staging.Commit{},
		stop: make(chan struct{}), stopped: make(chan struct{}), seq: l.seq, compacted: j.Size() / 2, summarize: s.summarize, keep: s.keepState, warn: s.warn}
	for h, o := range l.objs {
		p.known[h] = 1
		if o.deep {
			p.known[h] = 2
		}
	}
	p.live, p.cps = s.ws.Saved()
	p.areas = s.areasLocked()
	p.setCommits(p.areas)
	p.slots = map[string]*memfs.Snapshot{"live": p.live}
	for name, ast := range p.areas {
		p.slots[slotBase(name)] = ast.Base.Snap
		for _, l := range ast.Chain {
			p.slots[slotCommits(name)+l.ID.String()] = l.Snap
		}
	}
	for _, cp := range p.cps {
		p.slots["cp:"+cp.Name] = cp.Snap
	}
	s.pst = p
	rec := &Recovered{ID: opts.State.ID, Checkpoints: nil, Ended: notes}
	s.resumePushesLocked(ctx, l.sess.Pushes, rec)
	p.sess = nil // the pushes may have changed: the next save writes the record
	if err := s.saveLocked(); err != nil {
		s.pst = nil
		return fail(err)
	}
	go p.syncLoop()
	rec.Changed, rec.Staged = s.changesLocked()
	rec.Checkpoints = s.ws.CheckpointNames()
	p.setSummary(s.summaryLocked())
	rec.Saved = l.saved
	s.recovered = rec
	return s, rec, nil
}

// restore installs a loaded journal's state in a new, empty session.
func (s *Session) restore(l *loaded) error {
	saved := slices.Sorted(maps.Keys(l.areas))
	var want []string
	for _, r := range s.repos {
		want = append(want, r.name)
	}
	if !slices.Equal(saved, want) {
		return fmt.Errorf("the session was saved with the repositories %s, and the worker file now names %s: start a new session (airlock serve --new), or restore the worker file",
			repoListing(saved), repoListing(want))
	}
	type repoLinks struct {
		r     *repo
		ar    *areaRec
		links []linkRec
		at    int // where its trees start in the interned list
	}
	// One pass makes every tree share what it shared before it was
	// written down: the quotas count each version once.
	var snaps []*memfs.Snapshot
	snaps = append(snaps, l.slots["live"])
	for _, cp := range l.cps {
		snaps = append(snaps, cp.Snap)
	}
	var rls []repoLinks
	for _, r := range s.repos {
		ar := l.areas[r.name]
		rl := repoLinks{r: r, ar: ar, links: append([]linkRec{ar.Base}, ar.Chain...), at: len(snaps)}
		for i, lr := range rl.links {
			slot := slotBase(r.name)
			if i > 0 {
				slot = slotCommits(r.name) + lr.ID
			}
			sn := l.slots[slot]
			if sn == nil {
				return fmt.Errorf("%w: no tree for %s", journal.ErrCorrupt, slot)
			}
			snaps = append(snaps, sn)
		}
		rls = append(rls, rl)
	}
	in := memfs.Intern(snaps...)
	live := in[0]
	cps := make([]memfs.SavedCheckpoint, len(l.cps))
	for i, cp := range l.cps {
		cps[i] = memfs.SavedCheckpoint{Name: cp.Name, Time: cp.Time, Snap: in[1+i]}
	}

	// The objects the session needs go into its store; what only the
	// workspace needs lives in its snapshots.
	all := staging.NewStore(1 << 62)
	for h, o := range l.objs {
		if got, err := all.PutRaw(o.t, o.data); err != nil || got != h {
			return fmt.Errorf("%w: object %s does not hash to its id", journal.ErrCorrupt, h)
		}
	}
	states := make([]staging.AreaState, len(rls))
	roots := []plumbing.Hash{}
	for k, rl := range rls {
		st, err := areaState(l, rl.ar, rl.links, in[rl.at:rl.at+len(rl.links)])
		if err != nil {
			return err
		}
		states[k] = st
		for _, lk := range append([]staging.Link{st.Base}, st.Chain...) {
			roots = append(roots, lk.ID, lk.Tree, lk.View)
		}
	}
	repoRecs := l.sess.repoRecs()
	for _, rr := range repoRecs {
		for _, b := range rr.Cps {
			for _, x := range b {
				if h, err := hashOf(x); err == nil {
					roots = append(roots, h)
				}
			}
		}
	}
	for _, pr := range l.sess.Pushes {
		for _, x := range []string{pr.Commit, pr.Old} {
			if h, err := hashOf(x); err == nil {
				roots = append(roots, h)
			}
		}
	}
	err := all.Walk(roots, func(plumbing.Hash, bool) bool { return false }, func(o plumbing.EncodedObject, _ bool) error {
		_, err := s.store.SetEncodedObject(o)
		return err
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, rl := range rls {
		if err := rl.r.area.Resume(states[k]); err != nil {
			return rl.r.wrap(err)
		}
	}
	if err := s.ws.Resume(live, cps); err != nil {
		return err
	}
	for hx, where := range l.sess.Published {
		if h, err := hashOf(hx); err == nil {
			s.published[h] = where
		}
	}
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
	return nil
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

// areaState turns a repository's area record, with its links' trees,
// back into the area's state.
func areaState(l *loaded, ar *areaRec, links []linkRec, snaps []*memfs.Snapshot) (staging.AreaState, error) {
	st := staging.AreaState{}
	for i, lr := range links {
		id, err1 := hashOf(lr.ID)
		tree, err2 := hashOf(lr.Tree)
		view, err3 := hashOf(lr.View)
		if err := errors.Join(err1, err2, err3); err != nil {
			return st, err
		}
		link := staging.Link{ID: id, Tree: tree, View: view, Snap: snaps[i], Paths: lr.Paths}
		if i == 0 {
			st.Base = link
			continue
		}
		c, ok := l.commits[id]
		if !ok {
			return st, fmt.Errorf("%w: staged commit %s has no record", journal.ErrCorrupt, id)
		}
		link.Commit = c
		st.Chain = append(st.Chain, link)
	}
	if ar.Pulled != nil {
		st.Pulled = append([]string{}, (*ar.Pulled)...)
	}
	for _, r := range ar.Dropped {
		st.Dropped = append(st.Dropped, staging.Refusal{Path: r.Path, Rule: pathguard.Rule(r.Rule), Why: r.Why})
	}
	return st, nil
}

// resumePushesLocked takes up the pushes a saved session had in flight.
func (s *Session) resumePushesLocked(ctx context.Context, recs []pushRec, rec *Recovered) {
	for _, pr := range recs {
		commit, _ := hashOf(pr.Commit)
		old, _ := hashOf(pr.Old)
		r := s.repoNamed(pr.Repo)
		if pr.Spec == nil || r == nil {
			continue
		}
		t, err := s.target(ctx, pr.Spec)
		if err != nil {
			lost := s.recordOutcome(pr.ID, "", pr.Ref, old, commit, "failed", fmt.Sprintf("the session resumed but could not open the target: %v", err))
			rec.Ended = append(rec.Ended, fmt.Sprintf("The push of %s (request %s) could not be taken up again: %v; git_push it again.%s", shortid.Hash(commit), pr.ID, err, lost))
			continue
		}
		head, herr := t.Head(ctx, pr.Ref)
		branch := targets.BranchName(pr.Ref)
		if pushState(pr.State) != requested {
			// A crash cut it while it landed: the branch says how it ended.
			if herr == nil && head == commit {
				lost := s.recordOutcome(pr.ID, t.ID(), pr.Ref, old, commit, "pushed", "interrupted by a restart after the branch moved")
				if lost == "" {
					// As a push that lands does before it answers: the
					// head, now with this outcome, kept in the target.
					// Under the lock, as the resume's other calls to the
					// target (Head, opening it) are: nothing answers
					// before the resume ends.
					if err := s.recordLedgerHead(ctx, t); err != nil {
						lost = fmt.Sprintf(" The ledger's head could not be kept in the target for `airlock ledger verify` to check against: %v.", err)
					}
				}
				s.advanceLocked(r, commit, pr.Spec, pr.Ref, t)
				rec.Ended = append(rec.Ended, fmt.Sprintf("The push of %s to %s (%s), interrupted by the restart, had landed: it is pushed.%s", shortid.Hash(commit), t.Describe(), branch, lost))
			} else {
				lost := s.recordOutcome(pr.ID, t.ID(), pr.Ref, old, commit, "failed", "interrupted by a restart before the branch moved")
				rec.Ended = append(rec.Ended, fmt.Sprintf("The push of %s to %s (%s) was interrupted by the restart before it landed; nothing was pushed: git_push it again.%s", shortid.Hash(commit), t.Describe(), branch, lost))
			}
			continue
		}
		c, err := r.area.Lookup(commit.String())
		if err != nil || herr != nil {
			why := "its commit is no longer staged"
			if herr != nil {
				why = herr.Error()
			}
			lost := s.recordOutcome(pr.ID, t.ID(), pr.Ref, old, commit, "withdrawn", "the session resumed, but "+why)
			rec.Ended = append(rec.Ended, fmt.Sprintf("The request %s to push %s was withdrawn at the restart: %s.%s", pr.ID, shortid.Hash(commit), why, lost))
			continue
		}
		p := &push{r: r, spec: pr.Spec, t: t, ref: pr.Ref, notes: pr.Notes, retries: pr.Retries, done: make(chan struct{})}
		for _, k := range pr.Keys {
			if h, err := hashOf(k); err == nil {
				p.keys = append(p.keys, pushKey{t.ID(), pr.Ref, h})
			}
		}
		if head == old {
			err = s.reofferLocked(ctx, p, c, head, pr.ID)
		} else {
			// The branch moved while airlock was down: the old request
			// compares with a head that is gone. Ask anew on the new one.
			if lost := s.recordOutcome(pr.ID, t.ID(), pr.Ref, old, commit, "withdrawn", "the session resumed and the branch had moved; asked again"); lost != "" {
				rec.Ended = append(rec.Ended, fmt.Sprintf("The request %s to push %s was asked again on the moved branch.%s", pr.ID, shortid.Hash(commit), lost))
			}
			err = s.askLocked(ctx, p, c, head)
		}
		if err != nil {
			rec.Ended = append(rec.Ended, fmt.Sprintf("The request %s to push %s could not be offered again: %v; git_push it again.", pr.ID, shortid.Hash(commit), err))
			continue
		}
		rec.Waiting = append(rec.Waiting, p.req.ID)
		go s.drive(p)
	}
}

// recordOutcome records in the ledger how a push a restart interrupted
// ended. The ledger that cannot take it is named in the returned sentence,
// which Recovered.Ended carries to the worker and the operator: the
// outcome is then known only from the branch.
func (s *Session) recordOutcome(id, target, ref string, old, new plumbing.Hash, result, note string) string {
	err := s.gate.RecordOutcome(id, target, ref, old, new, result, note)
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" The ledger could not record this (%v): the operator must free space for it or make it writable.", err)
}

// reofferLocked submits p's request again under its old id.
func (s *Session) reofferLocked(ctx context.Context, p *push, c *staging.Commit, head plumbing.Hash, id string) error {
	req, err := s.request(ctx, p.r, p.spec, p.t, p.ref, head, c)
	if err != nil {
		return err
	}
	tk, err := s.gate.Resubmit(req, id, s.pickFor(p))
	if err != nil {
		return err
	}
	p.commit, p.req, p.tk, p.state = c, tk.Request(), tk, requested
	key := pushKey{p.t.ID(), p.ref, c.ID}
	if !containsKey(p.keys, key) {
		p.keys = append(p.keys, key)
	}
	for _, k := range p.keys {
		s.byCommit[k] = p
	}
	s.pushes[p.req.ID] = p
	return nil
}

func containsKey(ks []pushKey, k pushKey) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}
