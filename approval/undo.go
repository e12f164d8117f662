package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/crashpoint"
)

// A reviewer's decision whose screen offers to undo it (Decision.Undoable,
// signed) does not land at once when the gate's policy has an undo window
// (Policy.UndoWindow): its push waits the window (Ticket.UndoUntil), then
// starts landing (Land), after which nothing undoes it. Until then the
// reviewer may undo it: a decision of verdict Undo, signed by a trusted
// key over the same request, through ResolveSigned like any decision.
//
// An undo is recorded as a withdrawal of the request (its own fields say
// it is an undo, of which verdict, signed by which key), before it takes
// effect: the request ends without landing, as a withdrawn one does, and
// its one decision stays in the ledger beside the record that undid it.
// A decision whose undo the ledger holds is never carried out, after a
// restart either (Decided does not return it), and its request is never
// offered again under its id (Resubmit asks a new one): one decision per
// request id stays true. The push asks again as a new request, whose
// Since says why (WhyUndone).
//
// A rejection is held the same way before the worker is told (undone, it
// is no longer remembered as rejected). Only a reviewer's whole approval
// or rejection is held: a pick has already rebuilt the worker's staged
// commits when it is decided, and the policy's decisions, and the gate's
// own (repeat-denied, rebased), have nobody to undo them.

// The undo window airlock serve gives by default, and the longest it
// takes: long enough to see the outcome line and press u after a slip of
// the key, short enough that the worker's git_push answers in seconds; an
// approved push held longer holds the worker, and its target moves on.
const (
	DefaultUndoWindow = 5 * time.Second
	MaxUndoWindow     = time.Minute
)

// Undo is the verdict that undoes the reviewer's decision of the request.
const Undo Verdict = "undo"

// WhyUndone is Since.Why of a request asked again after its reviewer
// undid their decision of the one before.
const WhyUndone = "you undid your decision"

// ErrUndone: the reviewer undid the decision; the push does not land.
var ErrUndone = errors.New("the reviewer undid the decision")

// ErrTooLateToUndo: the decision named cannot be undone (its push started
// landing, or it was never one a reviewer could undo).
var ErrTooLateToUndo = errors.New("too late to undo")

// holdLocked sets d.UndoUntil when d is a decision its reviewer may undo
// (before it is recorded: the ledger says until when).
func (g *Gate) holdLocked(t *Ticket, d *Decision) {
	d.UndoUntil = time.Time{}
	if g.policy.UndoWindow <= 0 || !d.Undoable || d.Verdict != Approve && d.Verdict != Reject || t.req.Kind != KindPush || !byReviewer(d.By) {
		return
	}
	d.UndoUntil = g.now().Add(g.policy.UndoWindow).UTC()
}

// heldLocked makes t, recorded with d, undoable until its landing (or,
// for a rejection, its being told) starts.
func (g *Gate) heldLocked(t *Ticket, d Decision) {
	if d.UndoUntil.IsZero() {
		return
	}
	t.undone = make(chan struct{})
	g.undoable[t.req.ID] = t
}

// byReviewer reports whether by names a person, not the policy nor the
// gate's own memory.
func byReviewer(by string) bool {
	return by != "" && !strings.HasPrefix(by, "policy:") && !strings.HasPrefix(by, "rebased:") && by != "repeat-denied"
}

// UndoUntil is when the ticket's approval starts landing unless its
// reviewer undoes it first; zero: it lands at once.
func (t *Ticket) UndoUntil() time.Time {
	select {
	case <-t.done:
		return t.dec.UndoUntil
	default:
		return time.Time{}
	}
}

// Undone is closed when the reviewer undoes the ticket's approval (nil
// for one that cannot be undone).
func (t *Ticket) Undone() <-chan struct{} {
	select {
	case <-t.done:
		return t.undone
	default:
		return nil
	}
}

// Land starts the landing of t's approval: from here it cannot be undone.
// It returns ErrUndone when the reviewer undid it first: the push must
// not land, and asks again.
func (g *Gate) Land(t *Ticket) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.wasUndone {
		return fmt.Errorf("request %s: %w", t.req.ID, ErrUndone)
	}
	t.landing = true
	if g.undoable[t.req.ID] == t {
		delete(g.undoable, t.req.ID)
	}
	return nil
}

// undo applies s, a signed undo whose signature and key ResolveSigned
// checked: the approval it names, still held, is undone and the undo
// recorded; anything else is refused, nothing changed.
func (g *Gate) undo(s SignedDecision, from string) (Decision, error) {
	id := s.Decision.Request
	g.mu.Lock()
	t := g.undoable[id]
	g.mu.Unlock()
	if t == nil {
		return Decision{}, g.tooLate(id)
	}
	// Over the request the approval was of: an undo signed over another
	// cannot be replayed on this one.
	if err := s.checkFingerprint(Fingerprint(t.req)); err != nil {
		return Decision{}, g.refuse(s, from, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.undoable[id] != t || t.landing {
		return Decision{}, g.tooLateLocked(id)
	}
	d := s.Decision
	d.Key, d.Sig, d.Fingerprint, d.New, d.Commits, d.UndoUntil = s.Key, s.Sig, s.Fingerprint, t.dec.New, nil, time.Time{}
	// The record first: an undo the ledger does not hold must not stop
	// a landing that a restart would then carry out.
	if _, err := g.ledger.Append(ledger.KindWithdrawal, undoRecord{Request: id, Why: "the reviewer undid their decision (" + string(t.dec.Verdict) + ")",
		Undone: t.dec.Verdict, By: d.By, Time: d.Time, Key: s.Key, Sig: s.Sig, Fingerprint: s.Fingerprint, From: from}); err != nil {
		return Decision{}, fmt.Errorf("approval: the ledger could not record the undo (%w), so the decision stands and the push lands", err)
	}
	crashpoint.Hit(crashpoint.UndoRecorded)
	t.wasUndone = true
	close(t.undone)
	delete(g.undoable, id)
	g.undone[id] = true
	if t.dec.Verdict == Reject {
		// Not rejected after all: the same change asked again is asked.
		delete(g.denied, fingerprint{t.req.Target, t.req.Ref, t.req.Tree})
	}
	return d, nil
}

// undoRecord is the ledger's withdrawal record of an undo.
type undoRecord struct {
	Request     string    `json:"request"`
	Why         string    `json:"why"`
	Undone      Verdict   `json:"undone"` // the verdict undone
	By          string    `json:"by"`
	Time        time.Time `json:"time"`
	Key         string    `json:"key,omitempty"`
	Sig         string    `json:"sig,omitempty"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	From        string    `json:"from,omitempty"`
}

// noteUndoLocked takes in a withdrawal record that undid a decision,
// and reports which (id "": none).
func (g *Gate) noteUndoLocked(r ledger.Record) (id string, undone Verdict) {
	var u struct {
		Request string  `json:"request"`
		Undone  Verdict `json:"undone"`
	}
	if json.Unmarshal(r.Data, &u) == nil && u.Request != "" && u.Undone != "" {
		g.undone[u.Request] = true
		return u.Request, u.Undone
	}
	return "", ""
}

// wasUndone reports whether the decision of id was undone; req, offered
// again, then says so.
func (g *Gate) wasUndone(req *Request, id string) bool {
	g.mu.Lock()
	undone := g.undone[id]
	g.mu.Unlock()
	if undone {
		req.Since = &Since{Request: id, Why: WhyUndone, Tree: req.Tree}
	}
	return undone
}

func (g *Gate) tooLate(id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tooLateLocked(id)
}

func (g *Gate) tooLateLocked(id string) error {
	switch {
	case g.undone[id]:
		return fmt.Errorf("request %s: %w: it is undone already", id, ErrTooLateToUndo)
	case g.decided[id].by != "":
		return fmt.Errorf("request %s: %w: its push has started landing, or its decision was not one to undo (only an approval of the whole, within its window)", id, ErrTooLateToUndo)
	}
	return fmt.Errorf("request %s: %w: it is not decided here", id, ErrTooLateToUndo)
}
