package push

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
	"github.com/airlock-dev/airlock/internal/crashpoint"
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
	r       Repo // the repository it pushes from
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
	// accepted is what a hunk-by-hunk pick made: the worker is told what
	// landed and what stayed in its sandbox.
	accepted *staging.Accepted
	dropped  []Landed // the worker's commits nothing of which was accepted
	// comments are the reviewer's on an approval, kept for the landing:
	// a rebase decided on that approval carries none of its own.
	comments []approval.Comment
	// undone: the reviewer undid their approval of p.req, which is
	// asked again (undo.go).
	undone bool

	done chan struct{} // closed at the end; then res and err are set
	res  Result
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

// Result is how a push ended, or that it is still waiting.
type Result struct {
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
	Picked []string
	// Landed lists, when the reviewer accepted hunks, the commits the
	// push carried, oldest first; LeftOut what of the worker's commits
	// was not accepted and is unstaged in its sandbox.
	Landed  []Landed
	LeftOut []staging.LeftOut
	// Dropped lists the worker's commits nothing of which was accepted:
	// not pushed.
	Dropped               []Landed
	Files, Added, Deleted int
	// Notes say what happened on the way: rebases onto a moved target,
	// requests withdrawn.
	Notes []string
	// Comments are the reviewer's comments on an approved push, as the
	// worker reads them (RenderComments); a rejection's are in its error.
	Comments string
	// Worktree, when set, says why the branch moved but the files of the
	// working tree that has it checked out were not updated.
	Worktree error
}

// startLocked finds or starts the push of commitID. A nil push comes with
// the final answer (the branch is already there, or an error). headErr is
// the error reading the target's head: a call that joins a push in flight
// does not need it.
func (b *Book) startLocked(ctx context.Context, r Repo, spec *worker.TargetSpec, t targets.Target, facts targets.Facts, headErr error, commitID string) (*push, Result, error) {
	ref := facts.Ref
	commits := r.Area().Commits()
	var c *staging.Commit
	var err error
	if commitID != "" {
		// A commit a push in flight was asked for (before a moved target
		// rebased it, say) joins that push.
		for k, p := range b.byCommit {
			if k.target == t.ID() && k.ref == ref && len(commitID) >= 4 && strings.HasPrefix(k.commit.String(), commitID) {
				return p, Result{}, nil
			}
		}
	}
	switch {
	case commitID != "":
		if c, err = r.Area().Lookup(commitID); err != nil {
			return nil, Result{}, b.notStagedLocked(t, facts, headErr, commitID, err)
		}
	case len(commits) == 0:
		return nil, Result{}, errors.New("nothing is staged: git_stage your changes first, then git_push the commit it returns")
	default:
		c = commits[len(commits)-1]
	}
	key := pushKey{t.ID(), ref, c.ID}
	if p := b.byCommit[key]; p != nil {
		return p, Result{}, nil
	}
	if headErr != nil {
		return nil, Result{}, headErr
	}
	head := facts.Head
	if head == c.ID {
		// It is there already (a push whose answer was lost, or the same
		// commit pushed by another route): nothing to ask.
		b.advanceLocked(r, c.ID, spec, ref, t)
		return nil, Result{Already: true, Commit: c.ID, Target: t.Describe(), Branch: targets.BranchName(ref)}, nil
	}
	p := &push{r: r, spec: spec, t: t, ref: ref, facts: facts, keys: []pushKey{key}, picks: make(chan *approval.PickAsk), done: make(chan struct{})}
	if err := b.askLocked(ctx, p, c, head); err != nil {
		var there *alreadyThereError
		if errors.As(err, &there) {
			return nil, Result{Already: true, Commit: c.ID, Target: t.Describe(), Branch: targets.BranchName(ref)}, nil
		}
		return nil, Result{}, err
	}
	go b.drive(p)
	return p, Result{}, nil
}

// notStagedLocked explains a commit id that names no staged commit: one
// already pushed says where it went.
func (b *Book) notStagedLocked(t targets.Target, facts targets.Facts, headErr error, commitID string, lookupErr error) error {
	for h, where := range b.published {
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
func (b *Book) reachesLocked(head plumbing.Hash, c *staging.Commit) bool {
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
		if cm, err := object.GetCommit(b.cfg.Store, h); err == nil {
			todo = append(todo, cm.ParentHashes...)
		}
	}
	return false
}

// askLocked makes the request to push c over head and submits it. When the
// target moved since c's base, c is first rebased onto head (withdrawing
// requests for commits that changes).
func (b *Book) askLocked(ctx context.Context, p *push, c *staging.Commit, head plumbing.Hash) error {
	if b.ended != "" {
		// A push on its way when the session ended, whose branch moved:
		// asked again now, it would wait for ever, withdrawn by no one.
		return fmt.Errorf("%w: %s, so it was not asked again", approval.ErrWithdrawn, b.ended)
	}
	if cur, err := p.r.Area().Lookup(c.ID.String()); err == nil {
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
		fetched, err := p.t.Fetch(ctx, p.ref, p.r.Area().Pulled(), b.cfg.Store)
		if err != nil {
			return err
		}
		if head = fetched; head == c.Base {
			return b.askLocked(ctx, p, c, head)
		}
		if b.reachesLocked(head, c) {
			// Another push carried c with it (a later commit of the same
			// chain landed first): nothing is left to ask.
			return &alreadyThereError{head: head}
		}
		withdrawn, err := b.unpinLocked(p.r.Area().Commits(), "the target moved, so the commit was rebased onto it", p)
		if err != nil {
			return err
		}
		res, err := p.r.Area().Rebase(head)
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
		if c, err = p.r.Area().Lookup(nu.String()); err != nil {
			return err
		}
	}
	p.facts.Head = head
	req, err := b.request(p, c)
	if err != nil {
		return err
	}
	b.sinceLocked(p, p.req, req)
	// A push the reviewer approved, rebased because the branch moved
	// before it landed, is decided by that approval when it shows the
	// same changes (approval.Gate.SubmitRebased); otherwise, and at the
	// first ask, a person is asked.
	tk, err := b.cfg.Gate.SubmitRebased(req, p.tk, p.picks)
	if err != nil {
		return err
	}
	if by := tk.Request().ID; p.tk != nil && tk != p.tk && settledByRebase(tk) {
		p.notes = append(p.notes, fmt.Sprintf("request %s (the same changes, rebased) went ahead on the reviewer's approval of %s", by, p.req.ID))
	}
	if other := b.pushes[tk.Request().ID]; other != nil && other != p {
		// The gate already holds this very request: that push is this one.
		return fmt.Errorf("push of %s is already waiting as request %s", shortid.Hash(c.ID), tk.Request().ID)
	}
	b.requestedLocked(p, c, tk)
	return nil
}

// requestedLocked makes tk, the request to push c, p's current one: p is
// found by its id and by every commit it was asked for.
func (b *Book) requestedLocked(p *push, c *staging.Commit, tk *approval.Ticket) {
	if p.req != nil {
		delete(b.pushes, p.req.ID)
	}
	p.commit, p.req, p.tk, p.state = c, tk.Request(), tk, requested
	key := pushKey{p.t.ID(), p.ref, c.ID}
	if !slices.Contains(p.keys, key) {
		p.keys = append(p.keys, key)
	}
	for _, k := range p.keys {
		b.byCommit[k] = p
	}
	b.pushes[p.req.ID] = p
}

// pick makes the commit of the files a reviewer picked of p's request,
// which the gate sent its driver, and answers the gate with it.
func (b *Book) pick(p *push, ask *approval.PickAsk) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ask.MadeCommits(b.pickLocked(p, ask))
}

func (b *Book) pickLocked(p *push, ask *approval.PickAsk) ([]plumbing.Hash, error) {
	if p.state != requested || p.req.ID != ask.Request {
		return nil, fmt.Errorf("the push is %s, no longer waiting for a decision", p.state)
	}
	// Picking rebuilds every staged commit: other requests for them go
	// first.
	if _, err := b.unpinLocked(p.r.Area().Commits(), "the reviewer picked files of another push, which rebuilt this commit", p); err != nil {
		return nil, err
	}
	pc, made, err := makePick(p, ask.Accept, ask.Paths, ask.At)
	if err != nil {
		return nil, err
	}
	crashpoint.Hit(crashpoint.PickMade)
	// From here the push carries the picked commit: it is what is pinned,
	// what a moved target rebases, what a later call joins.
	p.commit = pc
	key := pushKey{p.t.ID(), p.ref, pc.ID}
	p.keys = append(p.keys, key)
	b.byCommit[key] = p
	return made, nil
}

// await waits for p's end, at most the session's timeout.
func (b *Book) await(ctx context.Context, p *push, progress func(done, total float64, message string)) (Result, error) {
	timeout := b.cfg.Timeout
	start := time.Now()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	progress(0, timeout.Seconds(), "waiting for a reviewer to approve the push (airlock review)")
	for {
		select {
		case <-p.done:
			b.mu.Lock()
			p.waiters--
			b.mu.Unlock()
			return p.res, p.err
		case <-timer.C:
			b.mu.Lock()
			if p.state != requested {
				// Decided: the timeout is for the reviewer, not for the
				// target; wait for the landing.
				b.mu.Unlock()
				continue
			}
			defer b.mu.Unlock()
			p.waiters--
			return Result{Pending: true, RequestID: p.req.ID, Commit: p.commit.ID, Target: p.t.Describe(),
				Branch: targets.BranchName(p.ref), Notes: append([]string(nil), p.notes...)}, nil
		case <-ctx.Done():
			b.mu.Lock()
			defer b.mu.Unlock()
			p.waiters--
			if p.waiters == 0 && p.state == requested {
				// The client went away: nobody is waiting for this push.
				// One that is landing goes on; a withdrawal the ledger
				// cannot take leaves the request open for the reviewer.
				if err := b.withdrawLocked(p, "the worker's client disconnected"); err != nil && !errors.Is(err, errLanding) {
					b.h.Warn("%v", err)
				}
			}
			return Result{}, ctx.Err()
		case <-tick.C:
			el := time.Since(start)
			progress(el.Seconds(), timeout.Seconds(), fmt.Sprintf("waiting for a reviewer (%s so far)", el.Round(time.Second)))
		}
	}
}

// endLocked ends p with res or err and releases its waiters.
func (b *Book) endLocked(p *push, res Result, err error) {
	if p.state == ended {
		return
	}
	res.Notes = append(append([]string(nil), p.notes...), res.Notes...)
	if err != nil && len(p.notes) > 0 {
		err = fmt.Errorf("%s\n%w", strings.Join(p.notes, "\n"), err)
	}
	p.state, p.res, p.err = ended, res, err
	if p.req != nil && b.pushes[p.req.ID] == p {
		delete(b.pushes, p.req.ID)
	}
	for _, k := range p.keys {
		if b.byCommit[k] == p {
			delete(b.byCommit, k)
		}
	}
	close(p.done)
}

// withdrawLocked withdraws p's request; its driver then ends it.
func (b *Book) withdrawLocked(p *push, why string) error {
	if p.state != requested {
		return fmt.Errorf("push of %s: %w", shortid.Hash(p.commit.ID), errLanding)
	}
	if err := b.cfg.Gate.Withdraw(p.req.ID, why); err != nil {
		if !errors.Is(err, approval.ErrNotPending) {
			// The ledger could not record it: the request stays open.
			return fmt.Errorf("the request to push %s could not be withdrawn (%w); it is still waiting for a reviewer", shortid.Hash(p.commit.ID), err)
		}
		// Decided meanwhile, or a pick is being built: it is under way.
		return fmt.Errorf("push of %s: %w", shortid.Hash(p.commit.ID), errLanding)
	}
	return nil
}

// unpinLocked withdraws the requests, other than except's, that push any
// of commits (a push carries the staged commits before its own), because
// a change is about to rebuild them. It refuses, changing nothing, when
// one of them is already past its decision.
func (b *Book) unpinLocked(commits []*staging.Commit, why string, except *push) ([]string, error) {
	touched := map[plumbing.Hash]bool{}
	for _, c := range commits {
		touched[c.ID] = true
	}
	var hit []*push
	for _, p := range b.pushes {
		if p != except && p.state != ended && touched[p.commit.ID] {
			if p.state != requested {
				return nil, fmt.Errorf("the push of %s to %s is under way: wait for its git_push to answer, then try again", shortid.Hash(p.commit.ID), p.t.Describe())
			}
			hit = append(hit, p)
		}
	}
	var ids []string
	for _, p := range hit {
		if err := b.withdrawLocked(p, why); err != nil {
			if !errors.Is(err, errLanding) {
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
func stagedOrPublished(r Repo, id plumbing.Hash) bool {
	if id == r.Area().Base() {
		return true
	}
	for _, c := range r.Area().Commits() {
		if c.ID == id {
			return true
		}
	}
	return false
}

// advanceLocked records that id reached t's ref: the staged commits up to
// it are published and it is the base, which later pulls update from.
func (b *Book) advanceLocked(r Repo, id plumbing.Hash, spec *worker.TargetSpec, ref string, t targets.Target) {
	where := fmt.Sprintf("%s (%s)", t.Describe(), targets.BranchName(ref))
	if _, ok := b.published[id]; !ok {
		b.published[id] = where
	}
	// The staged commits before id in the chain went with it.
	chain := r.Area().Commits()
	if i := slices.IndexFunc(chain, func(c *staging.Commit) bool { return c.ID == id }); i > 0 {
		for _, c := range chain[:i] {
			if _, ok := b.published[c.ID]; !ok {
				b.published[c.ID] = fmt.Sprintf("%s with %s", where, shortid.Hash(id))
			}
		}
	}
	if id == r.Area().Base() {
		return // another push of it got there first
	}
	if err := r.Area().Advance(id); err != nil {
		return // not a staged commit: the branch has it, the sandbox moved on
	}
	r.SetBase(spec, ref)
	b.h.CollectLocked()
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

// errLanding: a commit a change would touch is on its way to a target.
var errLanding = errors.New("it is on its way to the target")
