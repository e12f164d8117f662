package approval

import (
	"fmt"
	"slices"
	"strings"
)

// A decision read back from the ledger (final.go) is carried out only
// when the gate would have taken it: the ledger of a fleet is appended to
// by every server (and by anyone who reaches a NATS that asks for no
// credentials), so an approval found there opens the door only when a key
// of Policy.ReviewerKeys signed it over the request offered again, or the
// policy made it (an auto-approved target). Anything else is refused:
// the push fails, saying so, and the worker pushes again to be asked.

// trustedLocked says why the gate does not trust d, the ledger's decision
// of req, as an approval (nil: it does, or it approves nothing).
func (g *Gate) trustedLocked(req *Request, d Decision) error {
	switch {
	case !d.Approved():
		return nil // a rejection lets nothing through
	case len(g.policy.ReviewerKeys) == 0:
		return nil // a gate of no reviewer keys takes no decision from elsewhere (tests, the demo)
	case d.By == "policy:auto" && req.Kind == KindPush && slices.Contains(g.policy.AutoApprove, req.Target):
		return nil
	case d.Sig == "":
		if strings.HasPrefix(d.By, "rebased:") {
			return fmt.Errorf("it is the approval of %s carried to a rebased push, which cannot be checked again after a restart", strings.TrimPrefix(d.By, "rebased:"))
		}
		return fmt.Errorf("it is not signed (by %q)", d.By)
	}
	trusted := make(map[string]bool, len(g.policy.ReviewerKeys))
	for _, k := range g.policy.ReviewerKeys {
		trusted[k] = true
	}
	s := SignedDecision{Decision: d, Fingerprint: d.Fingerprint, Key: d.Key, Sig: d.Sig}
	if err := s.checkSigned(trusted); err != nil {
		return err
	}
	want := Fingerprint(req)
	if d.Verdict == Pick && req.New == d.New {
		// req is of the commit the pick made (the session was saved
		// after it replaced the request's): the decision was signed over
		// the request the ledger recorded first under its id. The caller
		// has checked that commit is one its own session's pick made (the
		// decision record's New is the gate's, not signed: session/push's
		// resumeDecidedLocked finds it among the push's own commits).
		want = g.asked[d.Request]
	}
	return s.checkFingerprint(want)
}

// untrustedTicketLocked is the ticket of req (id) whose decision in the
// ledger, d, the gate does not trust (why): refused, and recorded so.
func (g *Gate) untrustedTicketLocked(req *Request, id string, d Decision, why error) *Ticket {
	req.ID, req.Time = id, d.Time
	reason := fmt.Sprintf("the ledger's approval of %s is not one this server takes (%v); nothing was pushed: push again to have a reviewer decide", id, why)
	t := &Ticket{req: req, done: make(chan struct{}), final: true,
		dec: Decision{Request: id, Verdict: Reject, Reason: reason, By: "refused", Time: d.Time}}
	g.mu.Unlock()
	err := g.refuse(SignedDecision{Decision: d, Fingerprint: d.Fingerprint, Key: d.Key, Sig: d.Sig}, "the ledger, read back when the request was offered again", why)
	g.mu.Lock()
	t.err = fmt.Errorf("%w: %s (%w)", ErrRejected, reason, err)
	close(t.done)
	return t
}
