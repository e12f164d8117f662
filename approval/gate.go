package approval

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/go-git/go-git/v5/plumbing"
)

// Errors callers branch on.
var (
	// ErrNoGrant: a push was attempted without a Grant (its zero value).
	ErrNoGrant = errors.New("no grant: every push needs a reviewer's approval")
	// ErrGrantMismatch: the Grant names a different push.
	ErrGrantMismatch = errors.New("the grant does not cover this push")
	// ErrRejected: the push was refused.
	ErrRejected = errors.New("push rejected")
	// ErrNetworkDenied: a run's request for the network was refused. It
	// is an ErrRejected too (errors.Is), worded for a run, not a push.
	ErrNetworkDenied error = networkDenied{}
	// ErrPending: no decision yet; the request stays open.
	ErrPending = errors.New("push still pending review")
	// ErrWithdrawn: the request was withdrawn before anyone decided.
	ErrWithdrawn = errors.New("push request withdrawn")
	// ErrNotPending: a decision named a request that is not open.
	ErrNotPending = errors.New("no such pending request")
)

// Mode is how requests are decided.
type Mode string

const (
	// ModeAsk: a human decides each push (the default).
	ModeAsk Mode = "ask"
	// ModeNever: every push is refused: review-only mode.
	ModeNever Mode = "never"
)

// Policy is how a Gate decides. It comes from the operator (the server's
// command line), never from a worker's configuration.
type Policy struct {
	Mode Mode
	// AutoApprove lists targets (as Request.Target) pushed to without
	// asking. Each such decision is recorded as the policy's.
	AutoApprove []string
	// Rules configures the risk flags.
	Rules Rules
	// ReviewerKeys are the public keys (nkeys user keys, "U…") whose
	// signed decisions ResolveSigned accepts: the only way a decision
	// from another process opens the door.
	ReviewerKeys []string
	// UndoWindow is how long a reviewer's approval waits before its push
	// starts landing (a rejection, before the worker is told), for the
	// reviewer to undo it (undo.go); 0: never.
	UndoWindow time.Duration
}

type pushKey struct {
	target, ref string
	old, new    plumbing.Hash
}

type fingerprint struct {
	target, ref string
	tree        plumbing.Hash
}

// Gate decides pushes: it records every request and decision in the
// ledger, applies the policy, remembers denied changes for the session,
// and mints Grants. It is safe for concurrent use.
type Gate struct {
	ledger Ledger
	policy Policy
	now    func() time.Time

	mu      sync.Mutex
	pending map[string]*Ticket
	byPush  map[pushKey]*Ticket
	denied  map[fingerprint]string
	// decided is every request id the ledger holds a decision of, and
	// seen the last ledger record read into it (final.go).
	decided map[string]decidedRec
	seen    uint64
	// asked is the fingerprint of each request id as the ledger first
	// recorded it: what a decision of it was signed over (finaltrust.go).
	asked   map[string]string
	subs    map[int]chan Event
	nextSub int
	// refusals counts the refused decisions of each request id (refuse).
	refusals map[string]int
	// undoable holds the approvals a reviewer may still undo, and undone
	// the ids whose decision was undone (undo.go).
	undoable map[string]*Ticket
	undone   map[string]bool
}

// NewGate returns a gate that records to ledger.
func NewGate(ledger Ledger, p Policy) *Gate {
	if p.Mode == "" {
		p.Mode = ModeAsk
	}
	g := &Gate{
		ledger: ledger, policy: p, now: time.Now,
		pending: map[string]*Ticket{}, byPush: map[pushKey]*Ticket{},
		denied: map[fingerprint]string{}, decided: map[string]decidedRec{}, asked: map[string]string{}, subs: map[int]chan Event{},
		refusals: map[string]int{}, undoable: map[string]*Ticket{}, undone: map[string]bool{},
	}
	g.loadDenied()
	return g
}

// ledgerRequest is what the ledger keeps of a request: no diff and no
// file contents, so no secret a file holds ends up in the ledger.
type ledgerRequest struct {
	ID       string       `json:"id"`
	Worker   string       `json:"worker"`
	Session  string       `json:"session,omitempty"`
	Repo     string       `json:"repo,omitempty"`
	Kind     string       `json:"kind,omitempty"`
	Command  string       `json:"command,omitempty"`
	Dir      string       `json:"dir,omitempty"`
	Reason   string       `json:"reason,omitempty"`
	Target   string       `json:"target"`
	Ref      string       `json:"ref"`
	NewRef   bool         `json:"new_ref"`
	Old      hexHash      `json:"old"`
	New      hexHash      `json:"new"`
	Tree     hexHash      `json:"tree"`
	Commits  []CommitInfo `json:"commits"`
	Files    []FileChange `json:"files"`
	Added    int          `json:"added"`
	Deleted  int          `json:"deleted"`
	Flags    []Flag       `json:"flags"`
	Attached bool         `json:"attached,omitempty"`
	// Resumed: the request was pending when its server stopped, and is
	// offered again by the resumed session under the same id.
	Resumed bool `json:"resumed,omitempty"`
	// RebasedFrom: the approved request this one is the same push of,
	// rebased onto the branch's new commit (SubmitRebased).
	RebasedFrom string `json:"rebased_from,omitempty"`
	// Fingerprint is the request's as its reviewer receives it
	// (Fingerprint): a decision read back after its pick's commits
	// replaced the request's is checked against it (finaltrust.go).
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Bounds on what a gate holds for reviewers.
const (
	MaxPending      = 16
	MaxPendingBytes = 256 << 20
)

// ErrTooManyPending: a gate holds as many requests as it may.
var ErrTooManyPending = errors.New("too many pushes waiting for review")

// Submit records req and returns its ticket. The policy, or the memory of
// a change already denied in this session, decides at once; otherwise the
// request waits for a reviewer. Submitting a push that is already pending
// (same target, ref, old and new commit) returns the pending ticket: the
// reviewer is not asked twice.
//
// picks, when not nil, is where the gate sends a reviewer's pick of some
// of the files (a PickAsk): the submitter receives from it while the
// request waits, makes the commit of those files and answers with Made.
// Nil: the files cannot be picked.
func (g *Gate) Submit(req *Request, picks chan<- *PickAsk) (*Ticket, error) {
	return g.submit(req, picks, "")
}

// Resubmit offers again, under its old id, a request that a session had
// waiting when its server stopped: the resumed session asks the same
// question, and a reviewer's answer to that id still reaches it. The
// ledger records it again, marked resumed.
// A request the ledger holds a decision of is not: its ticket comes back
// decided (Ticket.Final), nothing appended, for the caller to carry out.
func (g *Gate) Resubmit(req *Request, id string, picks chan<- *PickAsk) (*Ticket, error) {
	if !strings.HasPrefix(id, "req-") {
		return nil, fmt.Errorf("approval: %q is not a request id", id)
	}
	if t, ok, err := g.resubmitDecided(req, id); ok || err != nil {
		return t, err
	}
	if g.wasUndone(req, id) {
		// Its one decision stands in the ledger, undone: it is asked
		// again as a new request, never decided twice under its id.
		id = ""
	}
	return g.submit(req, picks, id)
}

// SubmitRebased is Submit for a push whose approved request (prev) could
// not land because the branch moved, and that was rebased onto the
// branch's new commit: when the rebased request shows the reviewer
// exactly what prev showed (the same target and ref, the same files, the
// same diff: the worker's changes, on paths the branch's move did not
// touch), prev's approval covers it, and it is decided at once on that
// approval: the ledger records the new request and a decision by
// "rebased:" and prev's id before the grant exists. Anything else (prev
// picked files, or was not approved, or the content under review
// differs) is asked as a new request.
func (g *Gate) SubmitRebased(req *Request, prev *Ticket, picks chan<- *PickAsk) (*Ticket, error) {
	if prev == nil || req.Kind != KindPush || !sameReview(prev, req) {
		return g.submit(req, picks, "")
	}
	if req.Target == "" || req.Ref == "" || req.New.IsZero() {
		return nil, errors.New("approval: a request needs a target, a ref and a commit")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	t, err := g.recordLocked(req, picks, "", prev.req.ID, false)
	if err != nil {
		return nil, err
	}
	return t, g.settleLocked(t, Decision{Verdict: Approve, By: "rebased:" + prev.req.ID,
		Reason: fmt.Sprintf("the changes approved in %s, rebased onto the branch's new commit %s", prev.req.ID, shortid.HashOr(req.Old, "(none)"))})
}

// sameReview reports whether prev was approved whole and req would show
// the reviewer what prev did.
func sameReview(prev *Ticket, req *Request) bool {
	select {
	case <-prev.done:
	default:
		return false
	}
	p := prev.req
	return prev.err == nil && prev.dec.Verdict == Approve && p.Kind == KindPush &&
		p.Target == req.Target && p.Ref == req.Ref && p.NewRef == req.NewRef &&
		!p.DiffTruncated && !req.DiffTruncated && p.Diff == req.Diff &&
		slices.Equal(p.Files, req.Files) && slices.Equal(p.Flags, req.Flags) &&
		slices.EqualFunc(p.Commits, req.Commits, func(a, b CommitInfo) bool { return a.Message == b.Message })
}

func (g *Gate) submit(req *Request, picks chan<- *PickAsk, id string) (*Ticket, error) {
	switch req.Kind {
	case KindPush:
		if req.Target == "" || req.Ref == "" || req.New.IsZero() {
			return nil, errors.New("approval: a request needs a target, a ref and a commit")
		}
	case KindNetwork:
		if req.Command == "" {
			return nil, errors.New("approval: a network request needs the command")
		}
		// The key and fingerprint of a network request are what the
		// reviewer saw (networkRef): the same asked twice is one request,
		// and a denied one is denied again at once.
		req.Target, req.Ref, req.Old, req.New, req.Tree = "network", networkRef(req), plumbing.ZeroHash, plumbing.ZeroHash, plumbing.ZeroHash
		picks, req.Pickable = nil, false
	default:
		return nil, fmt.Errorf("approval: unknown request kind %q", req.Kind)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	key := pushKey{req.Target, req.Ref, req.Old, req.New}
	if t, ok := g.byPush[key]; ok {
		return t, nil
	}
	// Each pending request holds its whole diff until it is decided: a
	// worker may not pile them up.
	held := heldBytes(req)
	for _, t := range g.pending {
		held += heldBytes(t.req)
	}
	if len(g.pending) >= MaxPending || held > MaxPendingBytes {
		return nil, fmt.Errorf("%w: %d pushes (%d MiB of diffs) are already waiting for a reviewer, the most one session may have; wait for their answers (call git_push again on one to keep waiting) before asking for more",
			ErrTooManyPending, len(g.pending), held>>20)
	}
	fp := fingerprint{req.Target, req.Ref, req.Tree}
	_, denied := g.denied[fp]
	byPolicy := denied || g.policy.Mode == ModeNever || req.Kind != KindNetwork && slices.Contains(g.policy.AutoApprove, req.Target)
	t, err := g.recordLocked(req, picks, id, "", !byPolicy)
	if err != nil {
		return nil, err
	}
	switch reason, denied := g.denied[fp]; {
	case denied:
		return t, g.settleLocked(t, Decision{Verdict: Reject, Reason: reason, By: "repeat-denied"})
	case g.policy.Mode == ModeNever:
		return t, g.settleLocked(t, Decision{Verdict: Reject, By: "policy:never",
			Reason: "airlock runs in review-only mode: no push leaves the sandbox"})
	case req.Kind == KindNetwork:
		// Auto-approval names push targets; the network is always asked.
	case slices.Contains(g.policy.AutoApprove, req.Target):
		return t, g.settleLocked(t, Decision{Verdict: Approve, By: "policy:auto"})
	}
	g.pending[req.ID] = t
	g.byPush[key] = t
	g.publishLocked(Event{Kind: EventAdded, Request: req})
	return t, nil
}

// recordLocked gives req its id (id, or a new one) and time, and records it
// in the ledger (rebasedFrom: the approved request it was rebased from).
// A request a reviewer will decide (asked) is recorded with its
// fingerprint, which a signed decision read back is checked against
// (finaltrust.go); one the policy decides is not: nobody signs it, and
// the fingerprint's round trip through JSON holds copies of the whole
// diff (TestBigDiffMemory's push request rose from 120 to 385 MiB).
func (g *Gate) recordLocked(req *Request, picks chan<- *PickAsk, id, rebasedFrom string, asked bool) (*Ticket, error) {
	if _, taken := g.pending[id]; id != "" && taken {
		return nil, fmt.Errorf("approval: request %s is already pending", id)
	}
	req.ID = id
	if id == "" {
		req.ID = newID()
	}
	req.Time = g.now().UTC()
	req.Pickable = req.Pickable && picks != nil
	// A second decision of the id is looked for after (final.go).
	t := &Ticket{req: req, picks: picks, done: make(chan struct{}), after: g.seen}
	rec, err := g.ledger.Append(ledger.KindRequest, ledgerRequest{
		ID: req.ID, Worker: req.Worker, Session: req.Session, Repo: req.Repo, Kind: req.Kind, Command: req.Command, Dir: req.Dir, Reason: req.Reason,
		Target: req.Target, Ref: req.Ref, NewRef: req.NewRef,
		Old: hexHash(req.Old), New: hexHash(req.New), Tree: hexHash(req.Tree), Commits: ledgerCommits(req.Commits), Files: req.Files,
		Added: req.Added, Deleted: req.Deleted, Flags: req.Flags, Resumed: id != "", RebasedFrom: rebasedFrom, Fingerprint: askedFingerprint(req, asked),
	})
	if err != nil {
		// Nothing is asked that the ledger does not hold.
		return nil, fmt.Errorf("approval: the ledger could not record the request (%w), so nobody was asked and nothing was pushed; the operator must make the ledger writable (disk full?), then ask again", err)
	}
	if id == "" {
		t.after = rec.Seq
	}
	return t, nil
}

// askedFingerprint is req's fingerprint when a reviewer is asked, else "".
func askedFingerprint(req *Request, asked bool) string {
	if !asked {
		return ""
	}
	return Fingerprint(req)
}

func newID() string {
	var b [6]byte
	rand.Read(b[:])
	return "req-" + hex.EncodeToString(b[:])
}

// ErrCannotApproveWhole: the request's diff was too large to show whole.
var ErrCannotApproveWhole = errors.New("cannot approve the whole push")

// Resolve applies a reviewer's decision to the pending request it names.
// The decision is in the ledger before the waiting push learns of it. For
// Pick, the commit of the picked paths is made first; if that fails,
// nothing is decided and the error says why, so the reviewer can choose
// again.
func (g *Gate) Resolve(d Decision) (Decision, error) { return g.resolve(d, nil) }

// resolve is Resolve of the request pending under d's id, which must be
// want when want is not nil (the ticket a signature was checked against:
// another offered under the same id meanwhile is not what was signed).
func (g *Gate) resolve(d Decision, want *Ticket) (Decision, error) {
	g.mu.Lock()
	t, ok := g.pending[d.Request]
	if !ok || t.busy || want != nil && t != want {
		err := g.notPendingLocked(d.Request)
		g.mu.Unlock()
		return Decision{}, err
	}
	if d.By == "" {
		d.By = "reviewer"
	}
	// A decision names a verdict, a reason and picked paths; which commit
	// is granted is the gate's to work out, never the decider's to say.
	d.New, d.Commits = plumbing.ZeroHash, nil
	if d.Sig == "" {
		// The time is the gate's, but a signed decision's, which its
		// record must keep to verify again (TestLedgerDecisionVerifiesAgain).
		d.Time = time.Time{}
	}
	switch {
	case t.req.Kind != KindNetwork:
		d.Scope = ""
	case d.Scope != ScopeOnce && d.Scope != ScopeCommand && d.Scope != ScopeSession:
		g.mu.Unlock()
		return Decision{}, fmt.Errorf("approval: unknown scope %q: give once (empty), command or session", d.Scope)
	case d.Verdict == Pick:
		g.mu.Unlock()
		return Decision{}, errors.New("approval: a network request has no files to pick; allow or deny it")
	}
	switch d.Verdict {
	case Approve:
		if len(d.Accept) > 0 || len(d.Paths) > 0 {
			// Naming part of a push under approve would land all of it.
			g.mu.Unlock()
			return Decision{}, errors.New("approval: an approval takes the whole push, so it names no files or hunks; to push only those, pick them (verdict pick)")
		}
	case Reject:
		d.Accept = nil // only a pick accepts hunks: the ledger holds what was done
	case Pick:
		if err := checkPick(t, d.Paths, d.Accept); err != nil {
			g.mu.Unlock()
			return Decision{}, err
		}
		if len(d.Accept) == 0 && len(d.Paths) == len(t.req.Files) {
			d.Verdict, d.Paths = Approve, nil
			break
		}
		// Building the commit may take a while: do it outside the lock,
		// with the ticket marked so no other decision lands meanwhile.
		// Dated with the decision's time: its record makes them again.
		t.busy = true
		if d.Time.IsZero() {
			d.Time = g.now().UTC()
		}
		g.mu.Unlock()
		ids, err := t.pick(d.Paths, d.Accept, d.Time)
		g.mu.Lock()
		t.busy = false
		if err != nil {
			g.mu.Unlock()
			return Decision{}, fmt.Errorf("approval: cannot make the commits of just what was picked: %w", err)
		}
		d.New, d.Commits = ids[len(ids)-1], ids
	default:
		g.mu.Unlock()
		return Decision{}, fmt.Errorf("approval: unknown verdict %q", d.Verdict)
	}
	if d.Verdict == Approve && t.req.DiffTruncated {
		g.mu.Unlock()
		return Decision{}, fmt.Errorf("%w: request %s is too large to show whole, so it cannot be approved whole; pick fewer files", ErrCannotApproveWhole, d.Request)
	}
	err := g.settleLocked(t, d)
	g.mu.Unlock()
	return t.dec, err
}

// settleLocked records d and releases the waiter. The ledger comes first:
// if it cannot be written (or holds a decision of it already), the push
// is refused.
func (g *Gate) settleLocked(t *Ticket, d Decision) error {
	req := t.req
	d.Request = req.ID
	if d.Time.IsZero() {
		// A signed decision keeps the time its reviewer signed: changed,
		// the record would no longer verify under the reviewer's key.
		d.Time = g.now().UTC()
	}
	if d.New.IsZero() && d.Approved() {
		d.New = req.New
	}
	g.holdLocked(t, &d)
	err := g.appendDecisionLocked(t, d)
	t.dec = d
	switch {
	case errors.Is(err, ErrAlreadyDecided):
		t.err = fmt.Errorf("approval: %w; nothing was pushed by this server", err)
	case err != nil:
		t.err = fmt.Errorf("approval: recording the decision failed, so the push is refused: %w", err)
	case d.Approved() && req.Kind == KindNetwork:
		// No grant: a network approval lets a run out, never a push.
	case d.Approved():
		t.grant = Grant{&grant{target: req.Target, ref: req.Ref, old: req.Old, new: d.New, request: req.ID}}
		g.heldLocked(t, d)
	default:
		g.denied[fingerprint{req.Target, req.Ref, req.Tree}] = d.Reason
		t.err = rejection(req, d)
		g.heldLocked(t, d)
	}
	if g.undoable[req.ID] != t {
		t.dec.UndoUntil = time.Time{} // not recorded, or refused: nothing to wait for
	}
	g.removeLocked(t)
	close(t.done)
	g.publishLocked(Event{Kind: EventResolved, Request: req})
	return err
}

func rejection(req *Request, d Decision) error {
	if req.Kind == KindNetwork {
		return networkRejection(d)
	}
	switch {
	case d.By == "repeat-denied" && d.Reason != "":
		return fmt.Errorf("%w: this same change was already rejected in this session (%q); change it before pushing again", ErrRejected, d.Reason)
	case d.By == "repeat-denied":
		return fmt.Errorf("%w: this same change was already rejected in this session; change it before pushing again", ErrRejected)
	case d.Reason != "":
		return fmt.Errorf("%w: %s", ErrRejected, d.Reason)
	}
	return fmt.Errorf("%w by the reviewer (no reason given)", ErrRejected)
}

// networkRejection words a denied network request as one: the worker is
// told what it can do instead of asking again (the same command is
// denied at once for the rest of the session, as its fingerprint is the
// command, its directory and its reach: networkRef), never to change a
// push it did not make.
func networkRejection(d Decision) error {
	const advice = "run the command without network: true (bring what it needs in with git_pull, or use what the workspace already has)"
	switch {
	case d.By == "repeat-denied" && d.Reason != "":
		return fmt.Errorf("%w: the reviewer already denied the network to this same command (in this directory, reaching the same) in this session (%q), so it is denied again at once; %s", ErrNetworkDenied, d.Reason, advice)
	case d.By == "repeat-denied":
		return fmt.Errorf("%w: the reviewer already denied the network to this same command (in this directory, reaching the same) in this session, so it is denied again at once; %s", ErrNetworkDenied, advice)
	case d.Reason != "":
		return fmt.Errorf("%w by the reviewer: %s; %s", ErrNetworkDenied, d.Reason, advice)
	}
	return fmt.Errorf("%w by the reviewer (no reason given); %s", ErrNetworkDenied, advice)
}

// networkDenied is ErrNetworkDenied: its own words, and an ErrRejected.
type networkDenied struct{}

func (networkDenied) Error() string        { return "network access denied" }
func (networkDenied) Is(target error) bool { return target == ErrRejected }

func (g *Gate) removeLocked(t *Ticket) {
	delete(g.pending, t.req.ID)
	key := pushKey{t.req.Target, t.req.Ref, t.req.Old, t.req.New}
	if g.byPush[key] == t {
		delete(g.byPush, key)
	}
}

// Withdraw closes a pending request without a decision (its push went
// away) and records that.
func (g *Gate) Withdraw(id, why string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.pending[id]
	if !ok || t.busy {
		return fmt.Errorf("%w %s", ErrNotPending, id)
	}
	if _, err := g.ledger.Append(ledger.KindWithdrawal, map[string]string{"request": id, "why": why}); err != nil {
		return err
	}
	t.err = fmt.Errorf("%w: %s", withdrawnAs(t.req), why)
	g.removeLocked(t)
	close(t.done)
	g.publishLocked(Event{Kind: EventWithdrawn, Request: t.req})
	return nil
}

// Pending returns the open requests, oldest first.
func (g *Gate) Pending() []*Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*Request, 0, len(g.pending))
	for _, t := range g.pending {
		out = append(out, t.req)
	}
	slices.SortFunc(out, func(a, b *Request) int { return a.Time.Compare(b.Time) })
	return out
}

// Subscribe returns a channel of events about requests, and a function to
// stop. Events that find the channel full are dropped: subscribers resync
// with Pending.
func (g *Gate) Subscribe() (<-chan Event, func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.nextSub
	g.nextSub++
	ch := make(chan Event, 64)
	g.subs[id] = ch
	return ch, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if c, ok := g.subs[id]; ok {
			delete(g.subs, id)
			close(c)
		}
	}
}

func (g *Gate) publishLocked(e Event) {
	for _, ch := range g.subs {
		select {
		case ch <- e:
		default:
		}
	}
}
