package approval

import (
	"fmt"

	"github.com/airlock-dev/airlock/approval/ledger"
)

// ResolveSigned is Resolve for a decision that comes from another process
// (the broker's socket, a fleet's queue): it is applied only when a key
// of Policy.ReviewerKeys signed it over the request pending under its id,
// and the ledger's decision record then holds the key, the signature and
// the fingerprint. Anything else is refused with an error wrapping
// ErrUnverified, changes nothing, and is recorded in the ledger as a
// record of its own kind (ledger.KindRefused) with from (who sent it, in
// words) and why. Resolve itself stays for in-process deciders (policy,
// tests, airlock demo --yes); no path from another process may call it.
func (g *Gate) ResolveSigned(s SignedDecision, from string) (Decision, error) {
	id := s.Decision.Request
	g.mu.Lock()
	t, pending := g.pending[id]
	trusted := make(map[string]bool, len(g.policy.ReviewerKeys))
	for _, k := range g.policy.ReviewerKeys {
		trusted[k] = true
	}
	g.mu.Unlock()
	fp := s.Fingerprint // not pending: only the signature and its key are checked
	if pending {
		// Outside the lock: a request carries its whole diff.
		fp = Fingerprint(t.req)
	}
	if err := s.verify(trusted, fp); err != nil {
		return Decision{}, g.refuse(s, from, err)
	}
	g.mu.Lock()
	var notPending error
	if !pending || g.pending[id] != t {
		// Decided, withdrawn, or offered again meanwhile (the
		// fingerprint checked may not be the request's now): a decided
		// one is refused naming the first decision, as Resolve does.
		notPending = g.notPendingLocked(id)
	}
	g.mu.Unlock()
	if notPending != nil {
		return Decision{}, notPending
	}
	d := s.Decision
	d.Key, d.Sig, d.Fingerprint = s.Key, s.Sig, s.Fingerprint
	return g.Resolve(d)
}

// refuse records a refused decision and returns the error for its sender.
func (g *Gate) refuse(s SignedDecision, from string, why error) error {
	d := s.Decision
	if _, err := g.ledger.Append(ledger.KindRefused, map[string]any{
		"request": d.Request, "verdict": d.Verdict, "by": d.By, "key": s.Key, "fingerprint": s.Fingerprint,
		"from": from, "why": why.Error(),
	}); err != nil {
		return fmt.Errorf("%w (%v); and the ledger could not record the refusal: %v", ErrUnverified, why, err)
	}
	return fmt.Errorf("%w: %v", ErrUnverified, why)
}
