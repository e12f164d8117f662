package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
)

// maxRequestDiff bounds the diff a request carries to the reviewer.
const maxRequestDiff = 32 << 20

// defaultRetries bounds how often one push rebases onto a target that moved
// under it, before it gives the worker the last word. A rebase that shows
// the reviewer what they approved goes ahead on that approval (see
// askLocked), so a busy branch costs retries here, not the worker's calls
// or the reviewer's attention: many servers pushing disjoint files to one
// branch all land.
const defaultRetries = 100

// A push is one transaction from a staged commit to a target's branch. Its
// states, each written to the ledger before the step it names is taken:
//
//	requested  the gate holds the request (ledger: request)
//	decided    a reviewer or the policy answered (ledger: decision)
//	landing    the target is being updated (ledger: push "landing")
//	landed     the branch is at the commit (ledger: push "pushed")
//	advanced   the sandbox's base is the commit; the push is over
//
// or it ends rejected, withdrawn or failed. While requested, its commits
// are pinned: a discard, pick or rebase that would change them withdraws
// the request first; while landing, they refuse. A target that moved
// between the request and the landing sends it back to requested, on the
// commit rebased onto the new head, with a new request.
type push struct {
	r       *repo // the repository it pushes from
	spec    *worker.TargetSpec
	t       targets.Target
	ref     string
	facts   targets.Facts   // what the target said when the current request was made
	commit  *staging.Commit // what the current request asks to push
	req     *approval.Request
	tk      *approval.Ticket
	state   pushState
	keys    []pushKey // every commit it was asked for, a rebase's old ones too
	notes   []string
	retries int
	waiters int // calls waiting on it now
	// picks carries a reviewer's pick of some files from the gate to the
	// driver, which makes their commit (pick).
	picks chan *approval.PickAsk

	done chan struct{} // closed at the end; then res and err are set
	res  PushResult
	err  error
}

type pushState string

const (
	requested pushState = "requested"
	decided   pushState = "decided"
	landing   pushState = "landing"
	ended     pushState = "ended"
)

type pushKey struct {
	target, ref string
	commit      plumbing.Hash
}

// PushResult is how a push ended, or that it is still waiting.
type PushResult struct {
	// Pending: the reviewer has not answered yet; RequestID names the
	// request, and a push of Commit again waits on it.
	Pending   bool
	RequestID string
	// Already: the branch was at Commit already; nothing was asked.
	Already bool
	Commit  plumbing.Hash // what was (or is to be) pushed
	Target  string        // the target as a person reads it
	Branch  string
	// Picked lists the files the reviewer picked, when they picked.
	Picked                []string
	Files, Added, Deleted int
	// Notes say what happened on the way: rebases onto a moved target,
	// requests withdrawn.
	Notes []string
	// Worktree, when set, says why the branch moved but the files of the
	// working tree that has it checked out were not updated.
	Worktree error
}

// Push asks for commitID (the latest staged commit when empty) to be pushed
// to the target named target and waits for the outcome, at most the
// session's Timeout: then the result is Pending, the push goes on, and
// calling Push again with the same commit waits on it. A push already in
// flight for the same commit, target and branch is joined, never asked
// twice. When ctx ends while nobody else waits, a request still waiting
// for review is withdrawn.
func (h *Repo) Push(ctx context.Context, commitID, target string, progress Progress) (PushResult, error) {
	res, err := h.push(ctx, commitID, target, progress)
	return res, h.r.wrap(err)
}

func (h *Repo) push(ctx context.Context, commitID, target string, progress Progress) (PushResult, error) {
	s, r := h.s, h.r
	if progress == nil {
		progress = func(float64, float64, string) {}
	}
	spec, err := r.resolveSpec(target)
	if err != nil {
		return PushResult{}, err
	}
	t, err := s.target(ctx, spec)
	if err != nil {
		return PushResult{}, err
	}
	// The attempt's one read of the target, outside the session's lock:
	// the ref, its head, the default branch, whether a push writes files.
	facts, headErr := targets.ReadFacts(ctx, t, spec.Branch)
	if facts.Ref == "" {
		return PushResult{}, headErr
	}
	s.mu.Lock()
	p, res, err := s.startLocked(ctx, r, spec, t, facts, headErr, commitID)
	if p == nil {
		s.mu.Unlock()
		return res, err
	}
	p.waiters++
	// A durable session has a new request down before the call waits on
	// it (up to the timeout, minutes): a server killed meanwhile offers it
	// again when it resumes, under the same id. An error is the call's to
	// report: gittools saves again after it and tells the worker.
	_ = s.saveLocked()
	s.mu.Unlock()
	return s.await(ctx, p, progress)
}

// startLocked finds or starts the push of commitID. A nil push comes with
// the final answer (the branch is already there, or an error). headErr is
// the error reading the target's head: a call that joins a push in flight
// does not need it.
func (s *Session) startLocked(ctx context.Context, r *repo, spec *worker.TargetSpec, t targets.Target, facts targets.Facts, headErr error, commitID string) (*push, PushResult, error) {
	ref := facts.Ref
	commits := r.area.Commits()
	var c *staging.Commit
	var err error
	if commitID != "" {
		// A commit a push in flight was asked for (before a moved target
		// rebased it, say) joins that push.
		for k, p := range s.byCommit {
			if k.target == t.ID() && k.ref == ref && len(commitID) >= 4 && strings.HasPrefix(k.commit.String(), commitID) {
				return p, PushResult{}, nil
			}
		}
	}
	switch {
	case commitID != "":
		if c, err = r.area.Lookup(commitID); err != nil {
			return nil, PushResult{}, s.notStagedLocked(t, facts, headErr, commitID, err)
		}
	case len(commits) == 0:
		return nil, PushResult{}, errors.New("nothing is staged: git_stage your changes first, then git_push the commit it returns")
	default:
		c = commits[len(commits)-1]
	}
	key := pushKey{t.ID(), ref, c.ID}
	if p := s.byCommit[key]; p != nil {
		return p, PushResult{}, nil
	}
	if headErr != nil {
		return nil, PushResult{}, headErr
	}
	head := facts.Head
	if head == c.ID {
		// It is there already (a push whose answer was lost, or the same
		// commit pushed by another route): nothing to ask.
		s.advanceLocked(r, c.ID, spec, ref, t)
		return nil, PushResult{Already: true, Commit: c.ID, Target: t.Describe(), Branch: targets.BranchName(ref)}, nil
	}
	p := &push{r: r, spec: spec, t: t, ref: ref, facts: facts, keys: []pushKey{key}, picks: make(chan *approval.PickAsk), done: make(chan struct{})}
	if err := s.askLocked(ctx, p, c, head); err != nil {
		var there *alreadyThereError
		if errors.As(err, &there) {
			return nil, PushResult{Already: true, Commit: c.ID, Target: t.Describe(), Branch: targets.BranchName(ref)}, nil
		}
		return nil, PushResult{}, err
	}
	go s.drive(p)
	return p, PushResult{}, nil
}

// notStagedLocked explains a commit id that names no staged commit: one
// already pushed says where it went.
func (s *Session) notStagedLocked(t targets.Target, facts targets.Facts, headErr error, commitID string, lookupErr error) error {
	for h, where := range s.published {
		if len(commitID) >= 4 && len(commitID) <= 40 && h.String()[:len(commitID)] == commitID {
			if headErr == nil && facts.Head == h {
				return fmt.Errorf("%s is already pushed: %s (%s) is at it; nothing to do", shortid.Hash(h), t.Describe(), targets.BranchName(facts.Ref))
			}
			return fmt.Errorf("%s was already pushed to %s, so it is not staged any more; git_stage new work to push more", shortid.Hash(h), where)
		}
	}
	return lookupErr
}

// settledByRebase reports whether tk was decided at once on an earlier
// approval of the same changes.
func settledByRebase(tk *approval.Ticket) bool {
	select {
	case <-tk.Done():
	default:
		return false
	}
	dec, _, err := tk.Wait(context.Background())
	return err == nil && strings.HasPrefix(dec.By, "rebased:")
}

// alreadyThereError: the branch's head already holds the commit to push,
// which another push carried with it.
type alreadyThereError struct{ head plumbing.Hash }

func (e *alreadyThereError) Error() string {
	return fmt.Sprintf("the branch is at %s, which holds the commit already", shortid.Hash(e.head))
}

// reachesLocked reports whether commit head (in the store) is c or has c
// among its ancestors, looking no further back than c's base.
func (s *Session) reachesLocked(head plumbing.Hash, c *staging.Commit) bool {
	todo, seen := []plumbing.Hash{head}, map[plumbing.Hash]bool{}
	for len(todo) > 0 && len(seen) < 10_000 {
		h := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		switch {
		case h == c.ID:
			return true
		case h == c.Base || seen[h]:
			continue
		}
		seen[h] = true
		if cm, err := object.GetCommit(s.store, h); err == nil {
			todo = append(todo, cm.ParentHashes...)
		}
	}
	return false
}

// askLocked makes the request to push c over head and submits it. When the
// target moved since c's base, c is first rebased onto head (withdrawing
// requests for commits that changes).
func (s *Session) askLocked(ctx context.Context, p *push, c *staging.Commit, head plumbing.Hash) error {
	if cur, err := p.r.area.Lookup(c.ID.String()); err == nil {
		// The area's own record of c: an Advance since (another push
		// landed) gave it a new base, which c's copy does not know.
		c = cur
	}
	if !head.IsZero() && head != c.Base {
		// The target moved since the pull (or the sandbox never pulled):
		// rebase onto it, in memory, if nothing overlaps. The result is a
		// new commit, so it gets its own review.
		// What the fetch finds is the head to rebase onto: the branch may
		// have moved again since head was read.
		fetched, err := p.t.Fetch(ctx, p.ref, p.r.area.Pulled(), s.store)
		if err != nil {
			return err
		}
		if head = fetched; head == c.Base {
			return s.askLocked(ctx, p, c, head)
		}
		if s.reachesLocked(head, c) {
			// Another push carried c with it (a later commit of the same
			// chain landed first): nothing is left to ask.
			return &alreadyThereError{head: head}
		}
		withdrawn, err := s.unpinLocked(p.r.area.Commits(), "the target moved, so the commit was rebased onto it", p)
		if err != nil {
			return err
		}
		res, err := p.r.area.Rebase(head)
		if err != nil {
			return err
		}
		nu, ok := res.Rebuilt[c.ID]
		if !ok {
			return fmt.Errorf("rebasing onto %s lost commit %s", shortid.Hash(head), shortid.Hash(c.ID))
		}
		p.notes = append(p.notes, fmt.Sprintf("%s moved to %s since your pull; your commit %s was rebased onto it and is now %s (files that came in from there: %s)",
			targets.BranchName(p.ref), shortid.Hash(head), shortid.Hash(c.ID), shortid.Hash(nu), listOrNone(res.Updated)))
		if len(withdrawn) > 0 {
			p.notes = append(p.notes, fmt.Sprintf("withdrew request %s, whose commits the rebase changed", listOrNone(withdrawn)))
		}
		if c, err = p.r.area.Lookup(nu.String()); err != nil {
			return err
		}
	}
	p.facts.Head = head
	req, err := s.request(p, c)
	if err != nil {
		return err
	}
	// A push the reviewer approved, rebased because the branch moved
	// before it landed, is decided by that approval when it shows the
	// same changes (approval.Gate.SubmitRebased); otherwise, and at the
	// first ask, a person is asked.
	tk, err := s.gate.SubmitRebased(req, p.tk, p.picks)
	if err != nil {
		return err
	}
	if by := tk.Request().ID; p.tk != nil && tk != p.tk && settledByRebase(tk) {
		p.notes = append(p.notes, fmt.Sprintf("request %s (the same changes, rebased) went ahead on the reviewer's approval of %s", by, p.req.ID))
	}
	if other := s.pushes[tk.Request().ID]; other != nil && other != p {
		// The gate already holds this very request: that push is this one.
		return fmt.Errorf("push of %s is already waiting as request %s", shortid.Hash(c.ID), tk.Request().ID)
	}
	s.requestedLocked(p, c, tk)
	return nil
}

// requestedLocked makes tk, the request to push c, p's current one: p is
// found by its id and by every commit it was asked for.
func (s *Session) requestedLocked(p *push, c *staging.Commit, tk *approval.Ticket) {
	if p.req != nil {
		delete(s.pushes, p.req.ID)
	}
	p.commit, p.req, p.tk, p.state = c, tk.Request(), tk, requested
	key := pushKey{p.t.ID(), p.ref, c.ID}
	if !slices.Contains(p.keys, key) {
		p.keys = append(p.keys, key)
	}
	for _, k := range p.keys {
		s.byCommit[k] = p
	}
	s.pushes[p.req.ID] = p
}

// pick makes the commit of the files a reviewer picked of p's request,
// which the gate sent its driver, and answers the gate with it.
func (s *Session) pick(p *push, ask *approval.PickAsk) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ask.Made(s.pickLocked(p, ask))
}

func (s *Session) pickLocked(p *push, ask *approval.PickAsk) (plumbing.Hash, error) {
	if p.state != requested || p.req.ID != ask.Request {
		return plumbing.ZeroHash, fmt.Errorf("the push is %s, no longer waiting for a decision", p.state)
	}
	// Picking rebuilds every staged commit: other requests for them go
	// first.
	if _, err := s.unpinLocked(p.r.area.Commits(), "the reviewer picked files of another push, which rebuilt this commit", p); err != nil {
		return plumbing.ZeroHash, err
	}
	pc, err := p.r.area.Pick(p.commit.ID, ask.Paths)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	// From here the push carries the picked commit: it is what is pinned,
	// what a moved target rebases, what a later call joins.
	p.commit = pc
	key := pushKey{p.t.ID(), p.ref, pc.ID}
	p.keys = append(p.keys, key)
	s.byCommit[key] = p
	return pc.ID, nil
}

// await waits for p's end, at most the session's timeout.
func (s *Session) await(ctx context.Context, p *push, progress Progress) (PushResult, error) {
	timeout := s.opts.Timeout
	start := time.Now()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	progress(0, timeout.Seconds(), "waiting for a reviewer to approve the push (airlock review)")
	for {
		select {
		case <-p.done:
			s.mu.Lock()
			p.waiters--
			s.mu.Unlock()
			return p.res, p.err
		case <-timer.C:
			s.mu.Lock()
			if p.state != requested {
				// Decided: the timeout is for the reviewer, not for the
				// target; wait for the landing.
				s.mu.Unlock()
				continue
			}
			defer s.mu.Unlock()
			p.waiters--
			return PushResult{Pending: true, RequestID: p.req.ID, Commit: p.commit.ID, Target: p.t.Describe(),
				Branch: targets.BranchName(p.ref), Notes: append([]string(nil), p.notes...)}, nil
		case <-ctx.Done():
			s.mu.Lock()
			defer s.mu.Unlock()
			p.waiters--
			if p.waiters == 0 && p.state == requested {
				// The client went away: nobody is waiting for this push.
				// One that is landing goes on; a withdrawal the ledger
				// cannot take leaves the request open for the reviewer.
				if err := s.withdrawLocked(p, "the worker's client disconnected"); err != nil && !errors.Is(err, errPushLanding) {
					s.warn("%v", err)
				}
			}
			return PushResult{}, ctx.Err()
		case <-tick.C:
			el := time.Since(start)
			progress(el.Seconds(), timeout.Seconds(), fmt.Sprintf("waiting for a reviewer (%s so far)", el.Round(time.Second)))
		}
	}
}

// endLocked ends p with res or err and releases its waiters.
func (s *Session) endLocked(p *push, res PushResult, err error) {
	if p.state == ended {
		return
	}
	res.Notes = append(append([]string(nil), p.notes...), res.Notes...)
	if err != nil && len(p.notes) > 0 {
		err = fmt.Errorf("%s\n%w", strings.Join(p.notes, "\n"), err)
	}
	p.state, p.res, p.err = ended, res, err
	if p.req != nil && s.pushes[p.req.ID] == p {
		delete(s.pushes, p.req.ID)
	}
	for _, k := range p.keys {
		if s.byCommit[k] == p {
			delete(s.byCommit, k)
		}
	}
	close(p.done)
}

// withdrawLocked withdraws p's request; its driver then ends it.
func (s *Session) withdrawLocked(p *push, why string) error {
	if p.state != requested {
		return fmt.Errorf("push of %s: %w", shortid.Hash(p.commit.ID), errPushLanding)
	}
	if err := s.gate.Withdraw(p.req.ID, why); err != nil {
		if !errors.Is(err, approval.ErrNotPending) {
			// The ledger could not record it: the request stays open.
			return fmt.Errorf("the request to push %s could not be withdrawn (%w); it is still waiting for a reviewer", shortid.Hash(p.commit.ID), err)
		}
		// Decided meanwhile, or a pick is being built: it is under way.
		return fmt.Errorf("push of %s: %w", shortid.Hash(p.commit.ID), errPushLanding)
	}
	return nil
}

// unpinLocked withdraws the requests, other than except's, that push any
// of commits (a push carries the staged commits before its own), because
// a change is about to rebuild them. It refuses, changing nothing, when
// one of them is already past its decision.
func (s *Session) unpinLocked(commits []*staging.Commit, why string, except *push) ([]string, error) {
	touched := map[plumbing.Hash]bool{}
	for _, c := range commits {
		touched[c.ID] = true
	}
	var hit []*push
	for _, p := range s.pushes {
		if p != except && p.state != ended && touched[p.commit.ID] {
			if p.state != requested {
				return nil, fmt.Errorf("the push of %s to %s is under way: wait for its git_push to answer, then try again", shortid.Hash(p.commit.ID), p.t.Describe())
			}
			hit = append(hit, p)
		}
	}
	var ids []string
	for _, p := range hit {
		if err := s.withdrawLocked(p, why); err != nil {
			if !errors.Is(err, errPushLanding) {
				return ids, err
			}
			return ids, fmt.Errorf("the push of %s to %s is under way: wait for its git_push to answer, then try again", shortid.Hash(p.commit.ID), p.t.Describe())
		}
		ids = append(ids, p.req.ID)
	}
	return ids, nil
}

// stagedOrPublished reports whether id is a staged commit of r or one the
// sandbox already published (its base, after another push of it landed).
func (r *repo) stagedOrPublished(id plumbing.Hash) bool {
	if id == r.area.Base() {
		return true
	}
	for _, c := range r.area.Commits() {
		if c.ID == id {
			return true
		}
	}
	return false
}

// advanceLocked records that id reached t's ref: the staged commits up to
// it are published and it is the base, which later pulls update from.
func (s *Session) advanceLocked(r *repo, id plumbing.Hash, spec *worker.TargetSpec, ref string, t targets.Target) {
	where := fmt.Sprintf("%s (%s)", t.Describe(), targets.BranchName(ref))
	if _, ok := s.published[id]; !ok {
		s.published[id] = where
	}
	// The staged commits before id in the chain went with it.
	chain := r.area.Commits()
	if i := slices.IndexFunc(chain, func(c *staging.Commit) bool { return c.ID == id }); i > 0 {
		for _, c := range chain[:i] {
			if _, ok := s.published[c.ID]; !ok {
				s.published[c.ID] = fmt.Sprintf("%s with %s", where, shortid.Hash(id))
			}
		}
	}
	if id == r.area.Base() {
		return // another push of it got there first
	}
	if err := r.area.Advance(id); err != nil {
		return // not a staged commit: the branch has it, the sandbox moved on
	}
	r.base, r.baseRef = spec, ref
	s.collectLocked()
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	if len(s) > 20 {
		return fmt.Sprintf("%s and %d more", strings.Join(s[:20], ", "), len(s)-20)
	}
	return strings.Join(s, ", ")
}
