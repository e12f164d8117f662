package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/crashpoint"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// A decision in the ledger is final: one per request id, across any crash
// and across servers that share a ledger. The gate keeps, from the ledger,
// every id decided (loaded when it starts, caught up when a session
// resumes, added as it records decisions); a resumed request whose id is
// decided is never offered again (Resubmit returns its ticket decided as
// the ledger says), and a second decision of an id is refused, nothing
// recorded (Resolve, settleLocked; AppendUnless makes the check and the
// append one step for a ledger other servers append to).

// ErrAlreadyDecided: a decision named a request the ledger holds a
// decision of. It is an ErrNotPending too (errors.Is).
var ErrAlreadyDecided = errors.New("already decided")

// decidedRec is what the gate keeps of a decision in the ledger.
type decidedRec struct {
	seq     uint64 // its record's number
	verdict Verdict
	by      string
	at      time.Time
}

// alreadyDecided is the error for a decision of an id decided before.
type alreadyDecided struct {
	id  string
	was decidedRec
}

func (e *alreadyDecided) Error() string {
	return fmt.Sprintf("request %s: %s: %s by %s at %s; this decision was not recorded: the first one stands (look at the list again)",
		e.id, ErrAlreadyDecided, e.was.verdict, termsafe.Line(e.was.by), e.was.at.UTC().Format(time.RFC3339))
}

func (e *alreadyDecided) Is(target error) bool {
	return target == ErrAlreadyDecided || target == ErrNotPending
}

// onceLedger is a ledger that appends a record only when check accepts
// every record after number after, as one step with the append: the
// file's lock, the stream's expected last sequence. Another server's
// decision of the same id can then never land beside this one.
type onceLedger interface {
	AppendUnless(kind string, data any, after uint64, check func(ledger.Record) error) (ledger.Record, error)
}

// ledgerDecision is the part of a decision record the gate reads back.
type ledgerDecision struct {
	Request string    `json:"request"`
	Verdict Verdict   `json:"verdict"`
	Reason  string    `json:"reason"`
	By      string    `json:"by"`
	Time    time.Time `json:"time"`
}

// noteLocked takes in one ledger record: the decided ids, and how far the
// gate has read (seen). The first decision of an id is the one that
// counts; a ledger written before this rule may hold more.
func (g *Gate) noteLocked(r ledger.Record) {
	if r.Seq > g.seen {
		g.seen = r.Seq
	}
	if r.Kind == ledger.KindRequest {
		var q struct {
			ID          string `json:"id"`
			Fingerprint string `json:"fingerprint"`
		}
		if json.Unmarshal(r.Data, &q) == nil && q.Fingerprint != "" {
			if _, ok := g.asked[q.ID]; !ok {
				g.asked[q.ID] = q.Fingerprint
			}
		}
		return
	}
	if r.Kind == ledger.KindWithdrawal {
		_, _ = g.noteUndoLocked(r) // undo.go; loadDenied reads which
		return
	}
	if r.Kind != ledger.KindDecision {
		return
	}
	var d ledgerDecision
	if json.Unmarshal(r.Data, &d) != nil || d.Request == "" {
		return
	}
	if _, ok := g.decided[d.Request]; !ok {
		g.decided[d.Request] = decidedRec{seq: r.Seq, verdict: d.Verdict, by: d.By, at: d.Time}
	}
}

// catchUpLocked reads the ledger's records the gate has not seen (other
// servers', sharing the ledger, since it started).
func (g *Gate) catchUpLocked() error {
	if g.ledger == nil {
		return nil
	}
	var recs []ledger.Record
	var err error
	if s, ok := g.ledger.(interface {
		RecordsSince(after uint64) ([]ledger.Record, error)
	}); ok {
		recs, err = s.RecordsSince(g.seen)
	} else {
		recs, err = g.ledger.Records()
	}
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Seq > g.seen {
			g.noteLocked(r)
		}
	}
	return nil
}

// Decided returns the decision the ledger holds of request id (ok false:
// none), reading what other servers recorded since the gate last looked.
func (g *Gate) Decided(id string) (Decision, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.decidedLocked(id)
}

func (g *Gate) decidedLocked(id string) (Decision, bool, error) {
	if err := g.catchUpLocked(); err != nil {
		return Decision{}, false, fmt.Errorf("approval: the ledger cannot be read to see whether request %s was decided: %w", id, err)
	}
	was, ok := g.decided[id]
	if !ok || g.undone[id] {
		// An undone decision is never carried out (undo.go).
		return Decision{}, false, nil
	}
	rec, found, err := g.LedgerRecord(was.seq)
	if err == nil && !found {
		err = fmt.Errorf("its record %d is not there", was.seq)
	}
	var d Decision
	if err == nil {
		err = json.Unmarshal(rec.Data, &d)
	}
	if err != nil {
		return Decision{}, true, fmt.Errorf("approval: the decision of request %s cannot be read back from the ledger: %w", id, err)
	}
	return d, true, nil
}

// decidedTicketLocked is the ticket of req (id), which the ledger holds
// decision d of: decided already, as the ledger says, with nothing
// appended and nobody asked. An approval's grant is for d.New (a pick's
// commit, which the caller made again).
func (g *Gate) decidedTicketLocked(req *Request, id string, d Decision) *Ticket {
	req.ID, req.Time = id, d.Time
	t := &Ticket{req: req, done: make(chan struct{}), final: true, dec: d}
	switch {
	case d.Approved() && req.Kind == KindNetwork:
	case d.Approved():
		nu := d.New
		if nu.IsZero() {
			nu = req.New
		}
		t.grant = Grant{&grant{target: req.Target, ref: req.Ref, old: req.Old, new: nu, request: id}}
	default:
		t.err = rejection(req, d)
	}
	close(t.done)
	return t
}

// resubmitDecided answers Resubmit for an id the ledger holds a decision
// of; ok false: none, offer it.
func (g *Gate) resubmitDecided(req *Request, id string) (*Ticket, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.pending[id]; ok {
		return t, true, nil
	}
	d, ok, err := g.decidedLocked(id)
	if err != nil || !ok {
		return nil, false, err
	}
	if why := g.trustedLocked(req, d); why != nil {
		return g.untrustedTicketLocked(req, id, d, why), true, nil // finaltrust.go
	}
	return g.decidedTicketLocked(req, id, d), true, nil
}

// appendDecisionLocked records d, t's decision, unless the ledger holds a
// decision of the same request already (this gate's memory, or a record
// another server appended since t's request): then nothing is recorded
// and the error says who decided it first.
func (g *Gate) appendDecisionLocked(t *Ticket, d Decision) error {
	if was, ok := g.decided[d.Request]; ok {
		return &alreadyDecided{id: d.Request, was: was}
	}
	var rec ledger.Record
	var err error
	if once, ok := g.ledger.(onceLedger); ok {
		rec, err = once.AppendUnless(ledger.KindDecision, d, t.after, func(r ledger.Record) error {
			if r.Kind != ledger.KindDecision {
				return nil
			}
			var other ledgerDecision
			if json.Unmarshal(r.Data, &other) != nil || other.Request != d.Request {
				return nil
			}
			was := decidedRec{seq: r.Seq, verdict: other.Verdict, by: other.By, at: other.Time}
			g.decided[d.Request] = was
			return &alreadyDecided{id: d.Request, was: was}
		})
	} else {
		rec, err = g.ledger.Append(ledger.KindDecision, d)
	}
	if err != nil {
		return err
	}
	g.decided[d.Request] = decidedRec{seq: rec.Seq, verdict: d.Verdict, by: d.By, at: d.Time}
	crashpoint.Hit(crashpoint.DecisionRecorded)
	return nil
}

// notPendingLocked is Resolve's error for an id it has no pending
// request of: already decided (the ledger says how), or unknown.
func (g *Gate) notPendingLocked(id string) error {
	if g.undone[id] {
		return fmt.Errorf("%w %s: its decision was undone, and the push was asked again as a new request: decide that one", ErrNotPending, id)
	}
	if was, ok := g.decided[id]; ok {
		return &alreadyDecided{id: id, was: was}
	}
	return fmt.Errorf("%w %s: it was already decided or withdrawn", ErrNotPending, id)
}
