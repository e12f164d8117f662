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
// words), why and the count of refusals of that id (past the first few,
// only each doubling of the count is recorded: see refuse). Resolve itself stays for in-process deciders (policy,
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
	// The signature first: the fingerprint is a JSON trip of the whole
	// diff, which a forged decision must not cost the server.
	if err := s.checkSigned(trusted); err != nil {
		return Decision{}, g.refuse(s, from, err)
	}
	if s.Decision.Verdict == Undo {
		return g.undo(s, from) // undo.go
	}
	if pending {
		// Outside the lock: a request carries its whole diff. (Not
		// pending: only the signature and its key are checked.)
		if err := s.checkFingerprint(Fingerprint(t.req)); err != nil {
			return Decision{}, g.refuse(s, from, err)
		}
	}
	g.mu.Lock()
	if !pending || g.pending[id] != t {
		// Decided (the ledger says how), withdrawn, or offered again
		// meanwhile: the fingerprint checked may not be the request's now.
		err := g.notPendingLocked(id)
		g.mu.Unlock()
		return Decision{}, err
	}
	g.mu.Unlock()
	if testHookVerified != nil {
		testHookVerified()
	}
	d := s.Decision
	d.Key, d.Sig, d.Fingerprint = s.Key, s.Sig, s.Fingerprint
	// Applied to t alone: another request offered under the same id
	// since the checks above is not the one the signature covers.
	return g.resolve(d, t)
}

// Refusals of one request id recorded one by one; past them, at each
// doubling of the count: whoever may send decisions (any writer of a
// fleet's decisions bucket) must not fill the ledger, which refuses every
// push once it cannot be written. The gate forgets its counts past
// maxRefusalIDs ids.
const (
	refusalsEach  = 8
	maxRefusalIDs = 4096
)

// refuse records a refused decision and returns the error for its sender.
func (g *Gate) refuse(s SignedDecision, from string, why error) error {
	d := s.Decision
	g.mu.Lock()
	if len(g.refusals) >= maxRefusalIDs {
		clear(g.refusals)
	}
	g.refusals[d.Request]++
	n := g.refusals[d.Request]
	g.mu.Unlock()
	if n > refusalsEach && n&(n-1) != 0 {
		return fmt.Errorf("%w: %v", ErrUnverified, why)
	}
	if _, err := g.ledger.Append(ledger.KindRefused, map[string]any{
		"request": d.Request, "verdict": d.Verdict, "by": d.By, "key": s.Key, "fingerprint": s.Fingerprint,
		"from": from, "why": why.Error(), "refusals": n,
	}); err != nil {
		return fmt.Errorf("%w (%v); and the ledger could not record the refusal: %v", ErrUnverified, why, err)
	}
	return fmt.Errorf("%w: %v", ErrUnverified, why)
}

// testHookVerified, when set by a test, runs between ResolveSigned's
// checks and the decision's taking effect.
var testHookVerified func()
