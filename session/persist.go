package session

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/session/push"
	"github.com/airlock-dev/airlock/session/record"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/worker"
)

// A durable session writes what it holds to its store's journal: after
// every call that changed the sandbox, one batch of records (package
// record), written before the call answers. When the journal has grown to
// twice what its state needs, it is rewritten whole (objects reachable
// now, and one full state record), atomically.

// persister is a session's side of its journal. Its fields are guarded by
// Session.mu: every save runs under it.
type persister struct {
	lease store.Lease
	j     store.Journal
	w     *record.Writer

	// started is seq after a new session's first record; 0 for a resumed
	// one. A session still at it has saved nothing since it started.
	started uint64
	// compacted is the journal's size after its last rewrite.
	compacted int64

	sumMu   sync.Mutex
	summary Summary
	sumDone bool // summary written since it last changed
	// changed: a save since the summary was last counted (counting
	// walks the changes, so it is done by the sync loop, not per call).
	changed   bool
	summarize func() (Summary, bool)
	keep      func() // makes the state again if it was removed (vanish.go)
	// syncErr is the sync loop's last failed flush, not yet told to a
	// worker (Session.FlushErr); warn tells the operator at once.
	syncErr error
	warn    func(format string, args ...any)
	stop    chan struct{}
	stopped chan struct{}
	// poke runs the sync loop's tick now, closing the channel sent when
	// it is done (tests: SyncNow).
	poke chan chan struct{}
}

// sessRec is the session's own state. A multi-repository session keeps
// each repository's base and checkpoints' bases in Repos.
type sessRec struct {
	Repos map[string]repoRec `json:"repos,omitempty"`

	Base *worker.TargetSpec `json:"base,omitempty"`
	// Sources are where the store reads lazy files from (targets' ids,
	// newest first): a resumed session opens them again.
	Sources   []string             `json:"sources,omitempty"`
	BaseRef   string               `json:"base_ref,omitempty"`
	Published map[string]string    `json:"published,omitempty"`
	Cps       map[string][4]string `json:"cps,omitempty"`
	Pushes    []push.Rec           `json:"pushes,omitempty"`
	// Seen and Comments are what the reviewer sent back or commented on
	// last (the next request's Since) and the comments the worker has
	// not answered yet.
	Seen     []push.Seen `json:"seen,omitempty"`
	Comments []push.Open `json:"comments,omitempty"`
}

// repoRec is one repository's part of sessRec.
type repoRec struct {
	Base    *worker.TargetSpec   `json:"base,omitempty"`
	BaseRef string               `json:"base_ref,omitempty"`
	Cps     map[string][4]string `json:"cps,omitempty"`
}

func hexOf(h plumbing.Hash) string { return record.HexOf(h) }

func hashOf(s string) (plumbing.Hash, error) { return record.HashOf(s) }

// stateLocked is what the session holds, as its journal saves it.
func (s *Session) stateLocked() (record.State, error) {
	live, cps := s.ws.Saved()
	st := record.State{Live: live, Cps: cps, Areas: s.areasLocked(), Store: s.store, Roots: s.rootsLocked()}
	for _, r := range s.repos {
		st.Repos = append(st.Repos, r.name)
	}
	var err error
	st.Sess, err = json.Marshal(s.sessRecLocked())
	return st, err
}

// save writes what changed since the last save as one batch. It runs
// under s.mu; without a state directory it does nothing.
func (s *Session) saveLocked() error {
	p := s.pst
	if p == nil {
		return nil
	}
	st, err := s.stateLocked()
	if err != nil {
		return err
	}
	var b journal.Batch
	pend, err := p.w.Delta(&b, st, time.Now().UTC())
	if err != nil || pend == nil {
		return err
	}
	if err := p.j.Write(&b); err != nil {
		return fmt.Errorf("saving the session to %s failed (%w); the change is made in memory, but a crash now would lose it", p.lease.Where(), err)
	}
	p.w.Done(pend)
	p.touch()
	// Written, but to the place the session's state is? (vanish.go)
	if rewrote, err := s.keepStateLocked(); rewrote || err != nil {
		return err
	}
	// The journal counts against the session's quota as its memory
	// does: rewritten whole once it holds twice what its state needs,
	// or more than the quota, so its size stays within a small multiple
	// of what the workspace may hold.
	if size := p.j.Size(); size > 2*p.compacted+4<<20 || size > s.ws.Limits().MaxTotalBytes+4<<20 && size > 2*p.compacted {
		return s.compactLocked()
	}
	return nil
}

// compactLocked rewrites the journal as the session's state alone.
func (s *Session) compactLocked() error {
	p := s.pst
	st, err := s.stateLocked()
	if err != nil {
		return err
	}
	var pend *record.Pending
	// Streamed to the new file: a large session is never held twice.
	err = p.j.RewriteWith(func(r journal.Records) error {
		var err error
		pend, err = p.w.Full(r, st, time.Now().UTC())
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the session's journal in %s failed: %w", p.lease.Where(), err)
	}
	p.w.Done(pend)
	p.compacted = p.j.Size()
	p.touch()
	return nil
}

// areasLocked is every repository's area as it stands.
func (s *Session) areasLocked() map[string]staging.AreaState {
	out := make(map[string]staging.AreaState, len(s.repos))
	for _, r := range s.repos {
		out[r.name] = r.area.Saved()
	}
	return out
}

func (s *Session) sessRecLocked() sessRec {
	r := sessRec{Sources: s.store.Sources()}
	if published := s.pushes.PublishedLocked(); len(published) > 0 {
		r.Published = map[string]string{}
		for h, where := range published {
			r.Published[h.String()] = where
		}
	}
	for _, rp := range s.repos {
		rr := repoRec{Base: rp.base, BaseRef: rp.baseRef}
		for name, bases := range s.cps {
			if b, ok := bases[rp.name]; ok {
				if rr.Cps == nil {
					rr.Cps = map[string][4]string{}
				}
				rr.Cps[name] = [4]string{hexOf(b.base), hexOf(b.baseView), hexOf(b.tip), hexOf(b.view)}
			}
		}
		if rp.name == "" {
			r.Base, r.BaseRef, r.Cps = rr.Base, rr.BaseRef, rr.Cps
			continue
		}
		if r.Repos == nil {
			r.Repos = map[string]repoRec{}
		}
		r.Repos[rp.name] = rr
	}
	r.Pushes = s.pushes.RecsLocked()
	r.Seen, r.Comments = s.pushes.SeenLocked(), s.pushes.OpenLocked()
	return r
}

// decodeSess reads the session's own record from a loaded journal.
func decodeSess(l *record.Loaded) (sessRec, error) {
	var sr sessRec
	if raw := l.Sess(); raw != nil {
		if err := json.Unmarshal(raw, &sr); err != nil {
			return sr, fmt.Errorf("%w: the session's record: %v", journal.ErrCorrupt, err)
		}
	}
	return sr, nil
}
