package push

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/session/record"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
)

// Config is what a Book keeps of its session for its life.
type Config struct {
	// Mu is the session's lock (Session.mu), which every method whose
	// name ends in Locked expects held and the rest take.
	Mu      *sync.Mutex
	Gate    *approval.Gate
	Store   *staging.Store
	Worker  string // the worker's name, for the request
	Session string // the session's id, for the request
	// Timeout is how long a call waits for a reviewer; Retries how often
	// one push rebases onto a moved target (defaultRetries when 0).
	Timeout time.Duration
	Retries int
	Rules   approval.Rules
}

// Host is what a push asks of its session, always with Config.Mu held.
type Host interface {
	SaveLocked() error
	SaveOrWarnLocked(what string)
	Warn(format string, args ...any)
	// RecordLedgerHead keeps the ledger's head in t after a push landed.
	RecordLedgerHead(ctx context.Context, t targets.Target) error
	// CollectLocked drops the objects no root reaches (after an advance).
	CollectLocked()
	// Repo is the repository named name; nil when there is none.
	Repo(name string) Repo
}

// Repo is the session's repository a push pushes from.
type Repo interface {
	Name() string
	Area() *staging.Area
	// BaseFrom reports whether the base was pulled from spec's target,
	// which therefore holds it.
	BaseFrom(spec *worker.TargetSpec) bool
	// BaseRef is the ref the base came from ("" when nothing was pulled).
	BaseRef() string
	// SetBase records that the base is now ref of spec's target.
	SetBase(spec *worker.TargetSpec, ref string)
}

// Book is a session's pushes in flight and the commits that reached a
// target. Its state is guarded by Config.Mu.
type Book struct {
	cfg       Config
	mu        *sync.Mutex
	h         Host
	pushes    map[string]*push         // pushes in flight, by request id
	byCommit  map[pushKey]*push        // the same, by what they push (and what they pushed before a rebase)
	published map[plumbing.Hash]string // commits that reached a target: where
	// seen is what the reviewer sent back or commented on last, per
	// repository, target and branch (since.go); open, the comments each
	// repository's worker has not answered (comments.go); reply, while a
	// push call asks, the worker's answer to them, for its Since.
	seen  map[seenKey]*Seen
	open  map[string]*Open
	reply *pendingReply
	// ended is why the session's worker is gone (WithdrawAllLocked): no
	// request is asked after it, since nobody would withdraw it.
	ended string
}

// NewBook makes the empty book of a session.
func NewBook(cfg Config, h Host) *Book {
	if cfg.Retries <= 0 {
		cfg.Retries = defaultRetries
	}
	return &Book{cfg: cfg, mu: cfg.Mu, h: h, pushes: map[string]*push{}, byCommit: map[pushKey]*push{},
		published: map[plumbing.Hash]string{}, seen: map[seenKey]*Seen{}, open: map[string]*Open{}}
}

// Push asks for commitID (the latest staged commit when empty) of r to be
// pushed to spec's target t (opened) and waits for the outcome, at most
// Config.Timeout: then the result is Pending, the push goes on, and
// calling Push again with the same commit waits on it. A push already in
// flight for the same commit, target and branch is joined, never asked
// twice. When ctx ends while nobody else waits, a request still waiting
// for review is withdrawn. It takes Config.Mu.
func (b *Book) Push(ctx context.Context, r Repo, spec *worker.TargetSpec, t targets.Target, commitID string, progress func(done, total float64, message string)) (Result, error) {
	return b.PushReply(ctx, r, spec, t, commitID, "", progress)
}

// PushReply is Push with the worker's reply to the reviewer's comments on
// its last push from r: a push that asks anew answers them (they leave
// the instructions), and the reviewer reads the reply in the request's
// Since. A call that joins a push in flight answers nothing.
func (b *Book) PushReply(ctx context.Context, r Repo, spec *worker.TargetSpec, t targets.Target, commitID, reply string, progress func(done, total float64, message string)) (Result, error) {
	if progress == nil {
		progress = func(float64, float64, string) {}
	}
	// The attempt's one read of the target, outside the session's lock:
	// the ref, its head, the default branch, whether a push writes files.
	facts, headErr := targets.ReadFacts(ctx, t, spec.Branch)
	if facts.Ref == "" {
		return Result{}, headErr
	}
	b.mu.Lock()
	inFlight := maps.Clone(b.pushes)
	b.reply = &pendingReply{repo: r.Name(), text: reply}
	p, res, err := b.startLocked(ctx, r, spec, t, facts, headErr, commitID)
	b.reply = nil
	if p != nil && p.req != nil && inFlight[p.req.ID] != p && !repeatDenied(p.tk) {
		// A new request: the worker pushed again from r, which answers
		// the comments it had. The same change pushed again is refused
		// at once and answers nothing: nobody saw it.
		b.answeredLocked(r)
	}
	if p == nil {
		b.mu.Unlock()
		return res, err
	}
	p.waiters++
	// A durable session has a new request down before the call waits on
	// it (up to the timeout, minutes): a server killed meanwhile offers it
	// again when it resumes, under the same id. An error is the call's to
	// report: gittools saves again after it and tells the worker.
	_ = b.h.SaveLocked()
	b.mu.Unlock()
	return b.await(ctx, p, progress)
}

// UnpinLocked withdraws the requests that push any of commits, because a
// change (a discard, a pull's rebase) is about to rebuild them, and
// returns their ids. It refuses, changing nothing, when one of them is
// already past its decision.
func (b *Book) UnpinLocked(commits []*staging.Commit, why string) ([]string, error) {
	return b.unpinLocked(commits, why, nil)
}

// WithdrawAllLocked withdraws every request still waiting for a reviewer
// (their worker is gone). One that is landing goes on; one the ledger
// cannot withdraw stays open for the reviewer, and the operator is told.
// No request is asked after it (askLocked): a push on its way whose branch
// moved ends then, withdrawn.
func (b *Book) WithdrawAllLocked(why string) {
	b.ended = why
	for _, p := range b.pushes {
		if err := b.withdrawLocked(p, why); err != nil && !errors.Is(err, errLanding) {
			b.h.Warn("%v", err)
		}
	}
}

// EndsLocked is a channel per push in flight, each closed when that push
// ends: a session that ends waits on them (outside its lock), so no push
// of its is still on its way to a target once it has ended.
func (b *Book) EndsLocked() []<-chan struct{} {
	var out []<-chan struct{}
	for _, p := range b.pushes {
		out = append(out, p.done)
	}
	return out
}

// AwaitEnds waits until every one of ends is closed, at most limit, and
// reports whether they all were. A session that ends waits so, outside its
// lock (which a push's driver takes to finish): once it has ended, no git
// of its still writes to a target, nor reads the sources its store closes;
// a target that hangs is not waited for forever.
func AwaitEnds(ends []<-chan struct{}, limit time.Duration) bool {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for _, end := range ends {
		select {
		case <-end:
		case <-timer.C:
			return false
		}
	}
	return true
}

// InFlightLocked is how many pushes are in flight; PendingLocked how many
// of them wait for a reviewer.
func (b *Book) InFlightLocked() int { return len(b.pushes) }

// PendingLocked: see InFlightLocked.
func (b *Book) PendingLocked() int {
	n := 0
	for _, p := range b.pushes {
		if p.state == requested {
			n++
		}
	}
	return n
}

// RootsLocked is what the store must keep for the pushes in flight: their
// commits, the commit each request showed (a pick replaces it in the
// area, but the reviewer's comments count its lines: commentedLocked
// quotes them when the push ends) and the target heads their requests
// compare with; and the trees the reviewer saw last, which the next
// requests are compared with.
func (b *Book) RootsLocked() []plumbing.Hash {
	var roots []plumbing.Hash
	for _, p := range b.pushes {
		roots = append(roots, p.commit.ID, p.req.Old)
		if p.req != nil {
			roots = append(roots, p.req.New)
		}
	}
	return append(roots, b.SeenTreesLocked()...)
}

// PublishedLocked is the commits that reached a target, with where: the
// session saves it, and a resume fills it in.
func (b *Book) PublishedLocked() map[plumbing.Hash]string { return b.published }

// Rec is a push in flight, as the session's record saves it.
type Rec struct {
	ID      string             `json:"id"`
	Repo    string             `json:"repo,omitempty"`
	Spec    *worker.TargetSpec `json:"spec"`
	Ref     string             `json:"ref"`
	Commit  string             `json:"commit"`
	Old     string             `json:"old,omitempty"`
	State   string             `json:"state"`
	Keys    []string           `json:"keys,omitempty"`
	Notes   []string           `json:"notes,omitempty"`
	Retries int                `json:"retries,omitempty"`
}

// RecsLocked is the pushes in flight to save, by request id.
func (b *Book) RecsLocked() []Rec {
	var recs []Rec
	for _, id := range slices.Sorted(maps.Keys(b.pushes)) {
		p := b.pushes[id]
		commit := p.commit.ID
		if p.state == requested {
			// The request's own commit, even once a pick is made of it
			// (p.commit) before the decision is recorded: a resume that
			// finds no decision offers what the reviewer saw, or
			// nothing; one that finds a pick makes it again from it.
			commit = p.req.New
		}
		pr := Rec{ID: id, Repo: p.r.Name(), Spec: p.spec, Ref: p.ref, Commit: commit.String(), Old: record.HexOf(p.req.Old),
			State: string(p.state), Notes: p.notes, Retries: p.retries}
		for _, k := range p.keys {
			pr.Keys = append(pr.Keys, k.commit.String())
		}
		recs = append(recs, pr)
	}
	return recs
}
