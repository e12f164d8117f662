package natsqueue

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// A decision in the ledger is final (approval.Gate.Resubmit): a request a
// server recorded the decision of before it was killed is never offered
// again, by it or by the server that resumes its session. What the queue
// still holds of it is settled here, by any server whose ledger holds
// the decision (in a fleet, all share it), when the entry is seen. The
// server writes only the outcomes bucket, as everywhere:
//   - a decision the dead server took (its outcome "applying") and
//     recorded is written "applied" with the decision as the ledger has
//     it, so its reviewer hears it was recorded;
//   - any other decision of it (a reviewer answering the stale offer) is
//     refused as already decided: nothing is recorded of it;
//   - the dead server's open entry goes, so that it is offered to nobody.

// settleDecided settles decision entry e of request id, which no running
// server of this gate has pending, when the gate's ledger holds a
// decision of id.
func (p *Publisher) settleDecided(id string, e jetstream.KeyValueEntry) {
	d, err := parseDecision(id, e.Value())
	if err != nil {
		return
	}
	key := outcomeKey(id, d.Nonce)
	prev, err := p.q.outcomes.Get(p.ctx, key)
	var out *outcomeEntry
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		// Not taken by any server: a reviewer's answer to an offer.
	case err != nil:
		return // the next poll tries again
	default:
		o, perr := parseOutcome(prev.Value())
		if perr != nil || o.State != stateApplying || o.Server == p.info.Name || !p.gone(o.Server) {
			return // not one this server may settle: its server runs, or it is settled
		}
		out = o
	}
	rec, ok, err := p.gate.Decided(id)
	if err != nil || !ok {
		return // undecided: it waits for the server that offers it again
	}
	settled := outcomeEntry{State: stateRefused, Server: p.info.Name,
		// As the gate words it (approval.ErrAlreadyDecided).
		Error: fmt.Sprintf("request %s: already decided: %s by %s at %s; this decision was not recorded: the first one stands",
			id, rec.Verdict, termsafe.Line(rec.By), rec.Time.UTC().Format(time.RFC3339))}
	if out != nil && rec.Sig != "" && rec.Sig == d.Signed.Sig {
		// The dead server's own: the ledger holds it under its signature.
		settled = outcomeEntry{State: stateApplied, Server: p.info.Name, Result: &rec}
	}
	b, _ := json.Marshal(settled)
	if out == nil {
		_, _ = p.q.outcomes.Create(p.ctx, key, b) // taken meanwhile: its taker settles it
	} else {
		p.write(key, b, prev.Revision())
	}
	p.dropStaleOffer(id)
}

// dropStaleOffer deletes request id's open entry when the server that
// wrote it no longer runs: the request is decided and offered nowhere.
func (p *Publisher) dropStaleOffer(id string) {
	e, err := p.q.offers.Get(p.ctx, "open."+id)
	if err != nil {
		return
	}
	o, err := parseOffer(id, e.Value())
	if err != nil || o.Server.Name == p.info.Name || !p.gone(o.Server.Name) {
		return
	}
	_ = p.q.offers.Delete(p.ctx, "open."+id, jetstream.LastRevision(e.Revision())) // a newer offer stays
	if o.Body != "" {
		_ = p.q.bodies.Delete(p.ctx, o.Body) // nobody reads it now
	}
}

// gone reports whether the server of that name is not running: its
// presence lapsed, or it is a process of this host (by its pid) that no
// longer runs. A server killed leaves its presence for presenceTTL; its
// restart on the same machine settles what the ledger decided at once,
// so the reviewer waiting on it hears sooner.
func (p *Publisher) gone(name string) bool {
	e, err := p.q.offers.Get(p.ctx, "server."+name)
	if err != nil || !alive(e) {
		return true
	}
	var info broker.ServerInfo
	return json.Unmarshal(e.Value(), &info) == nil && info.Name == name && info.Host == p.info.Host && info.PID > 0 && !broker.Alive(info.PID)
}
