package natsqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/natsconn"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// Options say where the queue is and how it behaves.
type Options struct {
	// Prefix names the buckets (Prefix_reviews...): "airlock" when empty.
	Prefix string
	// Replicas is how many NATS servers keep each entry: when zero, as
	// the buckets have it, 1 for new ones (a
	// three-node cluster runs 3).
	Replicas int
	// Warn receives a line for each queue entry ignored as hostile or
	// broken, and each write that failed; nil discards them.
	Warn io.Writer
	// ClaimWait is how long a reviewer's decision waits for a server to
	// take it before Decide says it is queued (broker.ErrQueued): 3 s when
	// zero.
	ClaimWait time.Duration
	// By names the reviewer in the decisions it makes (Watch): the OS
	// user, host and pid when empty.
	By string
}

// Bounds on what the queue holds and what a reader takes from it.
const (
	// MaxBody bounds a request's JSON, as the socket broker bounds a
	// message: a request carries its whole diff.
	MaxBody = 64 << 20
	// maxEntry bounds an open entry; maxDecision a decision (its comments
	// and hunk selections).
	maxEntry    = 256 << 10
	maxDecision = 1 << 20
	// maxInline is the largest request kept in its open entry itself:
	// one write and one read less than through the bodies store, which
	// most requests (a few files) are; larger ones go there.
	maxInline = maxEntry - 16<<10
	// DecisionTTL is how long a decision is kept: a request whose server
	// stays down longer is asked again when its session resumes.
	DecisionTTL = 7 * 24 * time.Hour
	// maxBy bounds a reviewer's name.
	maxBy = 256
)

// ErrAlreadyDecided: another reviewer's decision of the request won.
var ErrAlreadyDecided = errors.New("the request was already decided")

// presenceTTL is how long a server's presence counts without renewal.
const presenceTTL = 30 * time.Second

// alive reports whether a presence entry was renewed lately (by the NATS
// server's clock, as the entry's time is).
func alive(e jetstream.KeyValueEntry) bool {
	return e.Operation() == jetstream.KeyValuePut && time.Since(e.Created()) < presenceTTL
}

// idPattern is what a request id may be, as a KV key takes it.
var idPattern = regexp.MustCompile(`^req-[A-Za-z0-9_-]{1,64}$`)

// The states of a decision's outcome (no outcome: a reviewer's decision
// no server has taken yet).
const (
	stateApplying = "applying" // a server has taken it and is resolving it
	stateApplied  = "applied"  // the gate recorded it
	stateRefused  = "refused"  // the gate refused it: the request is free again
)

// offerEntry is the value of "open.ID".
type offerEntry struct {
	Server broker.ServerInfo `json:"server"`
	// Request is the request's JSON when it is small (maxInline); else
	// Body names it in the bodies store. Size is its length either way.
	Request json.RawMessage `json:"request,omitempty"`
	Body    string          `json:"body,omitempty"`
	Size    int64           `json:"size"`
	// Gone says why the request is no longer open: its server's last
	// word before it deletes the entry.
	Gone string `json:"gone,omitempty"`
}

// decisionEntry is the value of a decision's key (the request's id):
// the reviewer's signed decision. Reviewers write it, servers only read
// it: what a server says of it is an outcomeEntry.
type decisionEntry struct {
	Nonce  string                  `json:"nonce"` // the decider's, to know its outcome
	Signed approval.SignedDecision `json:"signed"`
}

// by is who the decision says decided.
func (d *decisionEntry) by() string { return d.Signed.Decision.By }

// outcomeEntry is the value of "ID.NONCE" in the outcomes bucket: what the
// server that has request ID made of the decision of that nonce.
type outcomeEntry struct {
	State  string             `json:"state"`
	Server string             `json:"server"` // the server that took it
	Result *approval.Decision `json:"result,omitempty"`
	Error  string             `json:"error,omitempty"`
}

// outcomeKey is where the outcome of decision nonce of request id is.
func outcomeKey(id, nonce string) string { return id + "." + nonce }

// queue is the buckets, open.
type queue struct {
	offers, decisions, outcomes jetstream.KeyValue
	bodies                      jetstream.ObjectStore
	o                           Options
	warnMu                      sync.Mutex
}

// open opens the queue's buckets: a server (server true) makes its own
// buckets or states their configuration again (Replicas), and makes the
// decisions bucket only when it is missing; a reviewer only makes what is
// missing. Neither changes the decisions bucket's configuration, so that
// a fleet's servers need no permission to (docs/fleet.md).
func open(ctx context.Context, nc *nats.Conn, o Options, server bool) (*queue, error) {
	if o.Prefix == "" {
		o.Prefix = "airlock"
	}
	if o.ClaimWait == 0 {
		o.ClaimWait = 3 * time.Second
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	q := &queue{o: o}
	name := o.Prefix + "_reviews"
	if q.offers, err = keyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: name, Storage: jetstream.FileStorage, Replicas: o.Replicas, MaxValueSize: maxEntry,
	}, server); err != nil {
		return nil, fmt.Errorf("natsqueue: the review queue's bucket %s (is JetStream enabled on %s?): %w", name, natsconn.ConnectedURL(nc), err)
	}
	if q.decisions, err = keyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: name + "_decisions", Storage: jetstream.FileStorage, Replicas: o.Replicas, MaxValueSize: maxDecision, TTL: DecisionTTL,
	}, false); err != nil {
		return nil, fmt.Errorf("natsqueue: the review queue's bucket %s_decisions: %w", name, err)
	}
	if q.outcomes, err = keyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: name + "_outcomes", Storage: jetstream.FileStorage, Replicas: o.Replicas, MaxValueSize: maxDecision, TTL: DecisionTTL,
	}, server); err != nil {
		return nil, fmt.Errorf("natsqueue: the review queue's bucket %s_outcomes: %w", name, err)
	}
	if q.bodies, err = objectStore(ctx, js, jetstream.ObjectStoreConfig{
		Bucket: name + "_bodies", Storage: jetstream.FileStorage, Replicas: o.Replicas,
	}, server); err != nil {
		return nil, fmt.Errorf("natsqueue: the review queue's store %s_bodies: %w", name, err)
	}
	return q, nil
}

// keyValue is the bucket cfg names: when restate and cfg.Replicas is
// not zero, made or stated again with cfg; else as the fleet has it (a
// reviewer's airlock review never scales an R3 fleet down), made if there
// is none (with one replica when cfg says none).
func keyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, restate bool) (jetstream.KeyValue, error) {
	if restate && cfg.Replicas != 0 {
		return js.CreateOrUpdateKeyValue(ctx, cfg)
	}
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	cfg.Replicas = max(cfg.Replicas, 1)
	return js.CreateKeyValue(ctx, cfg)
}

// objectStore is keyValue for an object store.
func objectStore(ctx context.Context, js jetstream.JetStream, cfg jetstream.ObjectStoreConfig, restate bool) (jetstream.ObjectStore, error) {
	if restate && cfg.Replicas != 0 {
		return js.CreateOrUpdateObjectStore(ctx, cfg)
	}
	st, err := js.ObjectStore(ctx, cfg.Bucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return st, err
	}
	cfg.Replicas = max(cfg.Replicas, 1)
	return js.CreateObjectStore(ctx, cfg)
}

// warn writes one line to Options.Warn, sanitised.
func (q *queue) warn(format string, args ...any) {
	if q.o.Warn == nil {
		return
	}
	q.warnMu.Lock()
	defer q.warnMu.Unlock()
	fmt.Fprintf(q.o.Warn, "airlock review queue: %s\n", termsafe.Line(fmt.Sprintf(format, args...)))
}

// noncePattern is what a decision's nonce may be: a part of a key.
var noncePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// parseDecision reads a decision entry, checked (its signature is the
// gate's to check: ResolveSigned).
func parseDecision(id string, raw []byte) (*decisionEntry, error) {
	if len(raw) > maxDecision {
		return nil, fmt.Errorf("%d bytes, more than %d", len(raw), maxDecision)
	}
	var e decisionEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("not a decision (%v)", err)
	}
	switch {
	case e.Signed.Decision.Request != id:
		return nil, fmt.Errorf("it names request %q under the key of %s", e.Signed.Decision.Request, id)
	case e.by() == "" || len(e.by()) > maxBy:
		return nil, fmt.Errorf("its reviewer's name is empty or longer than %d bytes", maxBy)
	case !noncePattern.MatchString(e.Nonce):
		return nil, errors.New("it has no nonce, or one not made of letters and digits")
	}
	return &e, nil
}

// parseOutcome reads an outcome entry, checked.
func parseOutcome(raw []byte) (*outcomeEntry, error) {
	if len(raw) > maxDecision {
		return nil, fmt.Errorf("%d bytes, more than %d", len(raw), maxDecision)
	}
	var e outcomeEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("not an outcome (%v)", err)
	}
	if e.State != stateApplying && e.State != stateApplied && e.State != stateRefused {
		return nil, fmt.Errorf("unknown state %q", e.State)
	}
	return &e, nil
}

// parseOffer reads an open entry, checked.
func parseOffer(id string, raw []byte) (*offerEntry, error) {
	if len(raw) > maxEntry {
		return nil, fmt.Errorf("%d bytes, more than %d", len(raw), maxEntry)
	}
	var e offerEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("not an offer (%v)", err)
	}
	switch {
	case e.Server.Name == "":
		return nil, errors.New("it names no server")
	case e.Gone != "":
	case len(e.Request) > 0 && (e.Body != "" || e.Size != int64(len(e.Request))):
		return nil, fmt.Errorf("it holds a request of %d bytes, and says %d in body %q", len(e.Request), e.Size, e.Body)
	case len(e.Request) > 0:
	case e.Body != id+"."+e.Server.Name:
		return nil, fmt.Errorf("its body %q is not the request's", e.Body)
	case e.Size <= 0 || e.Size > MaxBody:
		return nil, fmt.Errorf("its body's size %d is not between 1 and %d", e.Size, MaxBody)
	}
	return &e, nil
}

// nonce is a random name for one decision or one server.
func nonce() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keySafe makes s usable in a key or an object's name.
func keySafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}
