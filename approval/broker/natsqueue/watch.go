package natsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// watcher is a reviewer's view of the queue: it offers the Reviewer every
// open request no decision has taken, and takes back the others.
type watcher struct {
	q   *queue
	r   *broker.Reviewer
	ctx context.Context
	by  string
	// every is how often the queue is read besides the watch (resync).
	every time.Duration

	// Only the watching goroutine touches these.
	reqs     map[string]*seen         // by request id
	decs     map[string]*decisionSeen // by request id: its decision
	outs     map[string]string        // by outcome key: the state of a decision's outcome
	presence map[string]time.Time     // servers announced, by name: when last
}

// decisionSeen is a request's decision in the queue.
type decisionSeen struct{ nonce, by string }

// seen is an open entry of the queue, and what the reviewer was offered.
type seen struct {
	entry   *offerEntry
	req     *approval.Request
	offered bool
}

// serverKey is the key a server's requests are offered under in the
// Reviewer: no socket's path looks like it.
func serverKey(name string) string { return "nats:" + name }

// Watch returns a Reviewer of every request in the fleet's queue, grouped
// by server as the socket broker's are, whose decisions go through the
// queue to the server that has the request. It returns once the queue's
// current requests are offered, and follows it until ctx ends or Close.
func Watch(ctx context.Context, nc *nats.Conn, o Options) (*broker.Reviewer, error) {
	ctx, cancel := context.WithCancel(ctx)
	q, err := open(ctx, nc, o, false)
	if err != nil {
		cancel()
		return nil, err
	}
	ow, err := q.offers.WatchAll(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("natsqueue: watching the queue: %w", err)
	}
	dw, err := q.decisions.WatchAll(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("natsqueue: watching the queue's decisions: %w", err)
	}
	xw, err := q.outcomes.WatchAll(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("natsqueue: watching the queue's outcomes: %w", err)
	}
	var wg sync.WaitGroup
	r := broker.NewReviewer(func() { cancel(); wg.Wait() })
	w := &watcher{q: q, r: r, ctx: ctx, by: o.By, every: resync, reqs: map[string]*seen{}, decs: map[string]*decisionSeen{}, outs: map[string]string{}, presence: map[string]time.Time{}}
	if w.by == "" {
		w.by = reviewerName()
	}
	r.SetName(w.by)
	ready := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.run(ow, dw, xw, ready)
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		q.warn("the queue's current requests took over 10 s to read; they come in as they arrive")
	}
	return r, nil
}

// reviewerName is "USER on HOST (pid N)".
func reviewerName() string {
	name := fmt.Sprintf("uid %d", os.Getuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s on %s (pid %d, fleet queue)", name, host, os.Getpid())
}

func (w *watcher) run(ow, dw, xw jetstream.KeyWatcher, ready chan struct{}) {
	defer func() { _ = ow.Stop(); _ = dw.Stop(); _ = xw.Stop() }()
	t := time.NewTicker(w.every)
	defer t.Stop()
	oDone, dDone, xDone := false, false, false
	for {
		select {
		case <-w.ctx.Done():
			return
		case e, ok := <-ow.Updates():
			if !ok {
				return
			}
			if e == nil {
				oDone = true
			} else {
				w.offerChanged(e)
			}
		case e, ok := <-dw.Updates():
			if !ok {
				return
			}
			if e == nil {
				dDone = true
			} else {
				w.decisionChanged(e)
			}
		case e, ok := <-xw.Updates():
			if !ok {
				return
			}
			if e == nil {
				xDone = true
			} else {
				w.outcomeChanged(e)
			}
		case <-t.C:
			w.expire()
			if oDone {
				w.reconcile()
			}
		}
		if oDone && dDone && xDone && ready != nil {
			close(ready)
			ready = nil
		}
	}
}

// offerChanged follows one change of the offers bucket.
func (w *watcher) offerChanged(e jetstream.KeyValueEntry) {
	key, put := e.Key(), e.Operation() == jetstream.KeyValuePut
	if name, ok := strings.CutPrefix(key, "server."); ok {
		w.presenceChanged(name, e, put)
		return
	}
	id, ok := strings.CutPrefix(key, "open.")
	if !ok {
		w.q.warn("entry %q ignored: the queue holds open.ID and server.NAME only", key)
		return
	}
	s := w.reqs[id]
	if !put {
		if s != nil {
			w.take(id, s, "it was decided or withdrawn at its server")
			delete(w.reqs, id)
		}
		return
	}
	o, err := parseOffer(id, e.Value())
	if err != nil {
		w.q.warn("request entry %s ignored: %v", id, err)
		return
	}
	if o.Gone != "" {
		if s != nil && s.entry.Server.Name == o.Server.Name {
			w.take(id, s, o.Gone)
			delete(w.reqs, id)
		}
		return
	}
	if s != nil && s.entry.Server.Name == o.Server.Name && s.entry.Body == o.Body && s.entry.Size == o.Size {
		return // the same offer, written again
	}
	req, err := w.body(id, o)
	if err != nil {
		w.q.warn("request %s of server %s ignored: %v", id, o.Server.Name, err)
		return
	}
	if s != nil {
		w.take(id, s, fmt.Sprintf("it was offered again, by server %s on %s", o.Server.Name, o.Server.Host))
	}
	w.reqs[id] = &seen{entry: o, req: req}
	w.refresh(id)
}

// body reads and checks an offer's request.
func (w *watcher) body(id string, o *offerEntry) (*approval.Request, error) {
	if len(o.Request) > 0 {
		return decodeRequest(id, o.Request)
	}
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	info, err := w.q.bodies.GetInfo(ctx, o.Body)
	if err != nil {
		return nil, fmt.Errorf("its body %s: %w", o.Body, err)
	}
	if info.Size != uint64(o.Size) {
		return nil, fmt.Errorf("its body is %d bytes, the entry says %d", info.Size, o.Size)
	}
	res, err := w.q.bodies.Get(ctx, o.Body)
	if err != nil {
		return nil, fmt.Errorf("its body %s: %w", o.Body, err)
	}
	defer res.Close()
	raw, err := io.ReadAll(io.LimitReader(res, o.Size+1))
	if err != nil {
		return nil, fmt.Errorf("reading its body: %w", err)
	}
	if int64(len(raw)) != o.Size {
		return nil, fmt.Errorf("its body is not the %d bytes the entry says", o.Size)
	}
	return decodeRequest(id, raw)
}

// decodeRequest reads request id's JSON.
func decodeRequest(id string, raw []byte) (*approval.Request, error) {
	var req approval.Request
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("its body is not a request (%v)", err)
	}
	if req.ID != id {
		return nil, fmt.Errorf("its body is request %q", req.ID)
	}
	return &req, nil
}

// presenceChanged follows a server's presence: Servers lists the
// servers running, not those whose requests wait for their restart.
func (w *watcher) presenceChanged(name string, e jetstream.KeyValueEntry, put bool) {
	var info broker.ServerInfo
	if put && alive(e) && json.Unmarshal(e.Value(), &info) == nil && info.Name == name {
		w.presence[name] = e.Created()
		w.r.AddServer(serverKey(name), info)
		return
	}
	delete(w.presence, name)
	w.r.RemoveServer(serverKey(name))
}

// reconcile reads the open entries again, besides the watch: a watch that
// a NATS node's failure interrupts takes many seconds to resume, and a
// request asked meanwhile must reach the reviewer sooner.
func (w *watcher) reconcile() {
	ctx, cancel := context.WithTimeout(w.ctx, w.every)
	defer cancel()
	l, err := w.q.offers.ListKeysFiltered(ctx, "open.>")
	if err != nil {
		return // the watch, or the next try, brings it
	}
	listed := map[string]bool{}
	for k := range l.Keys() {
		id := strings.TrimPrefix(k, "open.")
		listed[id] = true
		if w.reqs[id] == nil {
			if e, err := w.q.offers.Get(ctx, k); err == nil {
				w.offerChanged(e)
			}
		}
	}
	if ctx.Err() != nil {
		return // the list may be cut short: nothing is taken as gone
	}
	for id, s := range w.reqs {
		if listed[id] {
			continue
		}
		if _, err := w.q.offers.Get(ctx, "open."+id); errors.Is(err, jetstream.ErrKeyNotFound) {
			w.take(id, s, "it was decided or withdrawn at its server")
			delete(w.reqs, id)
		}
	}
}

// expire forgets servers that stopped renewing their presence.
func (w *watcher) expire() {
	for name, at := range w.presence {
		if time.Since(at) >= presenceTTL {
			delete(w.presence, name)
			w.r.RemoveServer(serverKey(name))
		}
	}
}

// decisionChanged follows one change of the decisions bucket.
func (w *watcher) decisionChanged(e jetstream.KeyValueEntry) {
	id := e.Key()
	delete(w.decs, id)
	if e.Operation() == jetstream.KeyValuePut {
		d, err := parseDecision(id, e.Value())
		if err != nil {
			w.q.warn("a decision of %s ignored: %v", id, err)
		} else {
			w.decs[id] = &decisionSeen{nonce: d.Nonce, by: d.by()}
		}
	}
	if w.reqs[id] != nil {
		w.refresh(id)
	}
}

// outcomeChanged follows one change of the outcomes bucket.
func (w *watcher) outcomeChanged(e jetstream.KeyValueEntry) {
	key := e.Key()
	delete(w.outs, key)
	if e.Operation() == jetstream.KeyValuePut {
		if out, err := parseOutcome(e.Value()); err == nil {
			w.outs[key] = out.State
		}
	}
	if id, _, _ := strings.Cut(key, "."); w.reqs[id] != nil {
		w.refresh(id)
	}
}

// decided says whether a decision holds request id, and why in words: a
// decision no server refused.
func (w *watcher) decided(id string) (string, bool) {
	d := w.decs[id]
	if d == nil {
		return "", false
	}
	switch w.outs[outcomeKey(id, d.nonce)] {
	case stateRefused:
		return "", false
	case stateApplied:
		return "it was decided by " + d.by, true
	}
	return d.by + " decided it; it is applied when its server has the request", true
}

// refresh offers request id to the reviewer when it is open and no
// decision holds it, and takes it back otherwise.
func (w *watcher) refresh(id string) {
	s := w.reqs[id]
	why, decided := w.decided(id)
	switch {
	case !decided && !s.offered:
		w.r.Offer(serverKey(s.entry.Server.Name), s.entry.Server, s.req, &decider{w: w, id: id, server: s.entry.Server})
		s.offered = true
	case decided && s.offered:
		w.take(id, s, why)
	}
}

func (w *watcher) take(id string, s *seen, why string) {
	if s.offered {
		w.r.Take(serverKey(s.entry.Server.Name), id, termsafe.Line(why))
		s.offered = false
	}
}
