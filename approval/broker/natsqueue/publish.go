package natsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/crashpoint"
	"github.com/airlock-dev/airlock/internal/natsconn"
)

// Publisher puts one gate's waiting requests in the fleet's queue and
// applies the queue's decisions of them to the gate.
type Publisher struct {
	gate   *approval.Gate
	q      *queue
	nc     *nats.Conn
	info   broker.ServerInfo
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	every  time.Duration // resync, as it was at the start

	mu      sync.Mutex
	offered map[string]*offered // by request id
	// unfit are the requests the queue cannot carry (an id no gate
	// makes, a body over MaxBody): warned of once, reviewed on the socket.
	unfit map[string]bool
}

// offered is a request this server has in the queue.
type offered struct {
	rev  uint64 // its open entry's revision
	body string // its name in the bodies store; "" when in the entry
}

// resync is how often the queue is checked against the gate: the gate
// drops events a full subscriber misses, and a write that failed (NATS
// away for a moment) is made again.
var resync = 2 * time.Second

// Publish offers gate's requests to the fleet's reviewers through the
// queue until Close. info says which server offers them; its Host and
// Name are filled in when empty (Name must be unique to this process).
func Publish(gate *approval.Gate, nc *nats.Conn, o Options, info broker.ServerInfo) (*Publisher, error) {
	ctx, cancel := context.WithCancel(context.Background())
	q, err := open(ctx, nc, o, true)
	if err != nil {
		cancel()
		return nil, err
	}
	if info.Host == "" {
		info.Host, _ = os.Hostname()
	}
	if info.Name == "" {
		info.Name = fmt.Sprintf("%s-%d-%s", keySafe(info.Host), info.PID, nonce()[:8])
	}
	info.Name = keySafe(info.Name)
	p := &Publisher{gate: gate, q: q, nc: nc, info: info, ctx: ctx, cancel: cancel, every: resync, offered: map[string]*offered{}, unfit: map[string]bool{}}
	if err := p.announce(); err != nil {
		cancel()
		return nil, fmt.Errorf("natsqueue: announcing the server: %w", err)
	}
	events, stop := gate.Subscribe()
	p.sync()
	w, err := q.decisions.WatchAll(ctx)
	if err != nil {
		stop()
		cancel()
		return nil, fmt.Errorf("natsqueue: watching decisions: %w", err)
	}
	p.wg.Add(2)
	go p.watchDecisions(w)
	go p.follow(events, stop)
	return p, nil
}

// Info is the server as the queue names it.
func (p *Publisher) Info() broker.ServerInfo { return p.info }

// Close stops publishing. The requests still pending stay in the queue
// (a reviewer may decide them while this server is down; the server that
// offers them again applies the decision); the server's presence goes.
func (p *Publisher) Close() error {
	p.cancel()
	p.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return p.q.offers.Delete(ctx, "server."+p.info.Name)
}

// follow keeps the queue up with the gate's events.
func (p *Publisher) follow(events <-chan approval.Event, stop func()) {
	defer p.wg.Done()
	defer stop()
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			switch e.Kind {
			case approval.EventAdded:
				p.offer(e.Request)
			case approval.EventResolved:
				p.remove(e.Request.ID, "it was decided (by a reviewer, or by policy)")
			case approval.EventWithdrawn:
				p.remove(e.Request.ID, "the worker's push went away, so the request was withdrawn")
			}
		case <-t.C:
			if err := p.announce(); err != nil {
				p.q.warn("announcing this server: %v", err)
			}
			p.sync()
		}
	}
}

// sync offers what the gate has pending and the queue lacks, and removes
// what the queue has that the gate no longer holds.
func (p *Publisher) sync() {
	pending := map[string]bool{}
	for _, r := range p.gate.Pending() {
		pending[r.ID] = true
		p.mu.Lock()
		_, ok := p.offered[r.ID]
		p.mu.Unlock()
		if !ok {
			p.offer(r)
		}
	}
	p.mu.Lock()
	var gone []string
	for id := range p.offered {
		if !pending[id] {
			gone = append(gone, id)
		}
	}
	for id := range p.unfit {
		if !pending[id] {
			delete(p.unfit, id)
		}
	}
	p.mu.Unlock()
	for _, id := range gone {
		p.remove(id, "it is no longer waiting at its server")
	}
	p.pollDecisions()
}

// pollDecisions reads the decision of each request offered, besides the
// watch: a watch that a NATS node's failure interrupts takes seconds to
// resume, and a decision must not wait for it.
func (p *Publisher) pollDecisions() {
	p.mu.Lock()
	ids := make([]string, 0, len(p.offered))
	for id := range p.offered {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	for _, id := range ids {
		if e, err := p.q.decisions.Get(p.ctx, id); err == nil {
			p.consider(e)
		}
	}
}

// offer puts req in the queue, then applies a decision already waiting
// for it (made while no server had it pending).
func (p *Publisher) offer(req *approval.Request) {
	p.mu.Lock()
	_, dup := p.offered[req.ID]
	unfit := p.unfit[req.ID]
	p.mu.Unlock()
	if dup || unfit {
		return
	}
	body, err := json.Marshal(req)
	switch {
	case !idPattern.MatchString(req.ID):
		err = errors.New("its id is not one a gate makes")
	case err == nil && len(body) > MaxBody:
		err = fmt.Errorf("its JSON is %d bytes, more than %d", len(body), MaxBody)
	}
	if err != nil {
		p.mu.Lock()
		p.unfit[req.ID] = true
		p.mu.Unlock()
		p.q.warn("request %q not offered to the fleet: %v; review it with airlock review on this server's machine", req.ID, err)
		return
	}
	o := offerEntry{Server: p.info, Request: body, Size: int64(len(body))}
	if len(body) > maxInline {
		o.Request, o.Body = nil, req.ID+"."+p.info.Name
		if _, err := p.q.bodies.PutBytes(p.ctx, o.Body, body); err != nil {
			p.q.warn("request %s not offered to the fleet yet (storing its body: %v); trying again", req.ID, err)
			return
		}
	}
	entry, _ := json.Marshal(o)
	rev, err := p.q.offers.Put(p.ctx, "open."+req.ID, entry)
	if err != nil {
		p.q.warn("request %s not offered to the fleet yet (%v); trying again", req.ID, err)
		return
	}
	p.mu.Lock()
	p.offered[req.ID] = &offered{rev: rev, body: o.Body}
	p.mu.Unlock()
	if e, err := p.q.decisions.Get(p.ctx, req.ID); err == nil {
		p.consider(e)
	}
}

// remove takes id out of the queue, saying why, if the entry is still
// this server's.
func (p *Publisher) remove(id, why string) {
	p.mu.Lock()
	o := p.offered[id]
	delete(p.offered, id)
	p.mu.Unlock()
	if o == nil {
		return
	}
	ctx := p.ctx
	entry, _ := json.Marshal(offerEntry{Server: p.info, Gone: why})
	if rev, err := p.q.offers.Update(ctx, "open."+id, entry, o.rev); err == nil {
		_ = p.q.offers.Delete(ctx, "open."+id, jetstream.LastRevision(rev)) // a newer offer stays
	}
	if o.body != "" {
		_ = p.q.bodies.Delete(ctx, o.body) // the entry is gone: nobody reads it
	}
	// A decision queued but not taken can no longer be: say so to its
	// reviewer, who waits for its outcome.
	e, err := p.q.decisions.Get(ctx, id)
	if err != nil {
		return
	}
	if d, err := parseDecision(id, e.Value()); err == nil {
		b, _ := json.Marshal(outcomeEntry{State: stateRefused, Server: p.info.Name,
			Error: fmt.Sprintf("request %s is no longer waiting (%s) before this decision reached it", id, why)})
		_, _ = p.q.outcomes.Create(ctx, outcomeKey(id, d.Nonce), b) // one taken has its outcome already
	}
}

// watchDecisions considers every decision in the queue, those made
// before this server started included.
func (p *Publisher) watchDecisions(w jetstream.KeyWatcher) {
	defer p.wg.Done()
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-p.ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil && e.Operation() == jetstream.KeyValuePut {
				p.consider(e)
			}
		}
	}
}

// consider takes decision entry e to the gate if it is a decision of a
// request this server has pending that no server has taken (or one a
// server took and died with); anything else changes nothing. The server
// writes what it did to the outcomes bucket, never to the decisions.
func (p *Publisher) consider(e jetstream.KeyValueEntry) {
	id := e.Key()
	p.mu.Lock()
	o := p.offered[id]
	p.mu.Unlock()
	if o == nil {
		// Another server's, or one no server has now: it waits, unless
		// the ledger holds the request's decision (final.go).
		p.settleDecided(id, e)
		return
	}
	d, err := parseDecision(id, e.Value())
	if err != nil {
		p.q.warn("a decision of %s ignored: %v", id, err)
		return
	}
	key := outcomeKey(id, d.Nonce)
	mine, _ := json.Marshal(outcomeEntry{State: stateApplying, Server: p.info.Name})
	var rev uint64
	prev, err := p.q.outcomes.Get(p.ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		rev, err = p.q.outcomes.Create(p.ctx, key, mine)
	case err != nil:
		return // the next poll tries again
	default:
		out, perr := parseOutcome(prev.Value())
		if perr == nil && (out.State != stateApplying || out.Server == p.info.Name || p.running(out.Server)) {
			return // decided, refused, or being applied by a running server
		}
		// Its server died between taking it and writing the outcome,
		// and the request is waiting here again: the gate there did not
		// record it (a recorded decision is not offered again), so it
		// is this server's to apply. (An outcome that is not one is
		// nobody's.)
		rev, err = p.q.outcomes.Update(p.ctx, key, mine, prev.Revision())
	}
	if err != nil {
		return // taken by another server meanwhile: not this server's to apply
	}
	p.wg.Add(1)
	go p.apply(id, d, key, rev)
}

// announce writes this server's presence, again every resync.
func (p *Publisher) announce() error {
	b, _ := json.Marshal(p.info)
	_, err := p.q.offers.Put(p.ctx, "server."+p.info.Name, b)
	return err
}

// running reports whether the server of that name announced itself
// lately (it deletes its presence when it stops; one killed stops
// renewing it).
func (p *Publisher) running(name string) bool {
	e, err := p.q.offers.Get(p.ctx, "server."+name)
	return err == nil && alive(e)
}

// apply takes the claimed decision d to the gate, which verifies its
// signature and resolves it (a pick may take a while: the push makes its
// commits), and tells its reviewer the outcome.
func (p *Publisher) apply(id string, d *decisionEntry, key string, rev uint64) {
	defer p.wg.Done()
	res, err := p.gate.ResolveSigned(d.Signed, fmt.Sprintf("the fleet's queue at %s (decision %s)", natsconn.ConnectedURL(p.nc), d.Nonce))
	out := outcomeEntry{State: stateApplied, Server: p.info.Name, Result: &res}
	if err != nil {
		if errors.Is(err, approval.ErrUnverified) {
			p.q.warn("a decision of %s refused and recorded in the ledger: %v", id, err)
		}
		out = outcomeEntry{State: stateRefused, Server: p.info.Name, Error: err.Error()}
	}
	b, _ := json.Marshal(out)
	p.write(key, b, rev)
	crashpoint.Hit(crashpoint.ReviewerAnswered)
}

// write updates an outcome this server holds at rev, trying a little
// longer than the server's own context: the gate has acted, and the
// reviewer must hear how.
func (p *Publisher) write(key string, b []byte, rev uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, err := p.q.outcomes.Update(ctx, key, b, rev)
		if err == nil || errors.Is(err, jetstream.ErrKeyRevisionMismatch) || ctx.Err() != nil {
			if err != nil {
				p.q.warn("the outcome of the decision %s could not be written to the queue: %v", key, err)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
