package natsqueue

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// A decision in the ledger is final (approval.Gate.Resubmit): a request a
// server recorded the decision of before it was killed is never offered
// again, by it or by the server that resumes its session. What the queue
// still holds of it is settled here, by any server whose ledger holds
// the decision (in a fleet, all share it), when the entry is seen:
//   - a decision the dead server took ("applying") and recorded is
//     written "applied" with the decision as the ledger has it, so its
//     reviewer hears it was recorded;
//   - any other decision of it (a reviewer answering the stale offer) is
//     refused as already decided: nothing is recorded of it;
//   - the dead server's open entry goes, so that it is offered to nobody.

// settleDecided settles decision entry e of request id, which no running
// server of this gate has pending, when the gate's ledger holds a
// decision of id.
func (p *Publisher) settleDecided(id string, e jetstream.KeyValueEntry) {
	d, err := parseDecision(id, e.Value())
	if err != nil || (d.State != stateDecided && d.State != stateApplying) ||
		d.State == stateApplying && (d.Server == p.info.Name || !p.gone(d.Server)) {
		return // not one this server may settle: its server runs, or it is settled
	}
	rec, ok, err := p.gate.Decided(id)
	if err != nil || !ok {
		return // undecided: it waits for the server that offers it again
	}
	if d.State == stateApplying && sameDecision(rec, d) {
		d.State, d.Result = stateApplied, &rec
		b, _ := json.Marshal(d)
		p.write(id, b, e.Revision())
	} else {
		// As the gate words it (approval.ErrAlreadyDecided).
		p.refuse(id, d, e.Revision(), fmt.Errorf("request %s: already decided: %s by %s at %s; this decision was not recorded: the first one stands",
			id, rec.Verdict, termsafe.Line(rec.By), rec.Time.UTC().Format(time.RFC3339)))
	}
	p.dropStaleOffer(id)
}

// sameDecision reports whether the ledger's decision rec is the one
// entry d carried (its reviewer's, with its verdict).
func sameDecision(rec approval.Decision, d *decisionEntry) bool {
	// A pick of every file is recorded as an approval.
	return rec.By == d.By && (rec.Verdict == d.Decision.Verdict || rec.Verdict == approval.Approve && d.Decision.Verdict == approval.Pick)
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
