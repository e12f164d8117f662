package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/internal/natsconn"
	"github.com/airlock-dev/airlock/session/store"
)

// Options say where in JetStream a Store keeps sessions.
type Options struct {
	// Prefix names the stream, the buckets and the subjects (letters,
	// digits, - and _): "airlock" when empty.
	Prefix string
	// LeaseTTL is how long a holder that stopped renewing its lease
	// keeps it, renewed every third of it. Zero: the leases bucket's
	// own, when there is one (a command that only reads changes
	// nothing of the fleet's), else 10 s.
	LeaseTTL time.Duration
	// Replicas is how many servers of a cluster keep each message (a
	// fleet runs 3). Zero: as the leases bucket has it, else 1.
	Replicas int
	// Owner is recorded in every lease this Store takes: the address at
	// which this server serves the sessions it holds (BusyError.Owner).
	Owner string
}

// Store is the sessions kept in JetStream.
type Store struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	stream   jetstream.Stream
	sessions jetstream.KeyValue
	leases   jetstream.KeyValue
	prefix   string
	ttl      time.Duration
	chunk    int // a message's most data
	owner    string
	watch    *watch
}

var _ store.Store = (*Store)(nil)

// opTimeout bounds one call to the server.
const opTimeout = 10 * time.Second

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// New makes (or finds) the stream and buckets under o.Prefix on the
// server nc is connected to, which must have JetStream enabled.
func New(nc *nats.Conn, o Options) (*Store, error) {
	if o.Prefix == "" {
		o.Prefix = "airlock"
	}
	if !namePattern.MatchString(o.Prefix) {
		return nil, fmt.Errorf("natsstore: prefix %q: use only letters, digits, - and _", o.Prefix)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("natsstore: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	o = asTheFleetHas(ctx, js, o)
	if o.LeaseTTL < 100*time.Millisecond {
		return nil, fmt.Errorf("natsstore: a lease TTL of %v is too short to renew: use 100ms or more", o.LeaseTTL)
	}
	st := &Store{nc: nc, js: js, prefix: o.Prefix, ttl: o.LeaseTTL, owner: o.Owner, watch: &watch{}}
	st.stream, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: o.Prefix + "_journal", Subjects: []string{o.Prefix + ".journal.>"},
		Storage: jetstream.FileStorage, Replicas: o.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("natsstore: the journal stream (is JetStream enabled on %s?): %w", natsconn.ConnectedURL(nc), err)
	}
	st.sessions, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: o.Prefix + "_sessions", Storage: jetstream.FileStorage, Replicas: o.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("natsstore: the sessions bucket: %w", err)
	}
	st.leases, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: o.Prefix + "_leases", Storage: jetstream.FileStorage, Replicas: o.Replicas, TTL: o.LeaseTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("natsstore: the leases bucket: %w", err)
	}
	// Headers and the protocol take some of a message's room.
	st.chunk = max(int(nc.MaxPayload())-4<<10, 4<<10)
	return st, nil
}

// asTheFleetHas fills o's zero LeaseTTL and Replicas from the leases
// bucket, when there is one, else with the defaults.
func asTheFleetHas(ctx context.Context, js jetstream.JetStream, o Options) Options {
	if o.LeaseTTL == 0 || o.Replicas == 0 {
		if kv, err := js.KeyValue(ctx, o.Prefix+"_leases"); err == nil {
			if s, err := kv.Status(ctx); err == nil {
				if o.LeaseTTL == 0 {
					o.LeaseTTL = s.TTL()
				}
				if ks, ok := s.(*jetstream.KeyValueBucketStatus); ok && o.Replicas == 0 {
					o.Replicas = ks.StreamInfo().Config.Replicas
				}
			}
		}
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 10 * time.Second
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	return o
}

func ctxOp() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// maxID bounds a session id (store.NewID makes 24 characters): a key
// or subject longer than a NATS server's control line (4 KiB) has it
// drop the connection, every session's with it, and ids come from
// clients' requests.
const maxID = 128

func checkID(id string) error {
	if len(id) > maxID || !namePattern.MatchString(id) {
		return fmt.Errorf("%w: %q is not a session id (see airlock sessions list)", store.ErrNoSession, id)
	}
	return nil
}

func metaKey(id string) string { return "meta." + id }
func sumKey(id string) string  { return "sum." + id }
func genKey(id string) string  { return "gen." + id }

func (st *Store) subject(id string, gen uint64) string {
	return fmt.Sprintf("%s.journal.%s.%d", st.prefix, id, gen)
}

func (st *Store) where(id string) string {
	return fmt.Sprintf("%s: stream %s_journal, subjects %s.journal.%s.*", natsconn.ConnectedURL(st.nc), st.prefix, st.prefix, id)
}

// Create makes a new session's state and takes its lease.
func (st *Store) Create(m store.Meta) (store.Lease, error) {
	m.Created = time.Now().UTC()
	m.ID = store.NewID(m.Created)
	l, err := st.take(m.ID)
	if err != nil {
		return nil, err
	}
	l.meta = m
	ctx, cancel := ctxOp()
	defer cancel()
	data, err := json.Marshal(m)
	if err == nil {
		l.metaRev, err = st.sessions.Create(ctx, metaKey(m.ID), data)
	}
	if err != nil {
		l.Unlock()
		return nil, fmt.Errorf("natsstore: session %s: writing its meta: %w", m.ID, err)
	}
	return l, nil
}

// Open takes session id's lease.
func (st *Store) Open(id string) (store.Lease, error) {
	if _, err := st.ReadMeta(id); err != nil {
		return nil, err
	}
	l, err := st.take(id)
	if err != nil {
		return nil, err
	}
	// Read again under the lease: a Remove may have ended meanwhile.
	ctx, cancel := ctxOp()
	defer cancel()
	m, rev, err := st.readMeta(ctx, id)
	if err != nil {
		l.Unlock()
		return nil, err
	}
	l.meta, l.metaRev = m, rev
	return l, nil
}

// ReadMeta reads session id's meta.
func (st *Store) ReadMeta(id string) (store.Meta, error) {
	if err := checkID(id); err != nil {
		return store.Meta{}, err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	m, _, err := st.readMeta(ctx, id)
	return m, err
}

func (st *Store) readMeta(ctx context.Context, id string) (store.Meta, uint64, error) {
	var m store.Meta
	var e jetstream.KeyValueEntry
	err := retry(ctx, func(ctx context.Context) (err error) { e, err = st.sessions.Get(ctx, metaKey(id)); return err })
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return m, 0, fmt.Errorf("%w: %s (see airlock sessions list)", store.ErrNoSession, id)
	}
	if err != nil {
		return m, 0, fmt.Errorf("natsstore: session %s: reading its meta: %w", id, err)
	}
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return m, 0, fmt.Errorf("natsstore: session %s: its meta: %w", id, err)
	}
	return m, e.Revision(), nil
}

// List lists the sessions, newest first.
func (st *Store) List() ([]store.Listed, error) {
	ctx, cancel := ctxOp()
	defer cancel()
	keys, err := st.sessions.ListKeysFiltered(ctx, "meta.*")
	if err != nil {
		return nil, fmt.Errorf("natsstore: listing sessions: %w", err)
	}
	var ids []string
	for k := range keys.Keys() {
		ids = append(ids, k[len("meta."):])
	}
	_ = keys.Stop() // the channel is drained: nothing is left to stop
	var out []store.Listed
	for _, id := range ids {
		m, _, err := st.readMeta(ctx, id)
		if errors.Is(err, store.ErrNoSession) {
			continue // removed since it was listed
		}
		if err != nil {
			return nil, err
		}
		li := store.Listed{Meta: m, Where: st.where(id), NoState: true}
		if e, err := st.sessions.Get(ctx, sumKey(id)); err == nil {
			if err := json.Unmarshal(e.Value(), &li.Summary); err != nil {
				return nil, fmt.Errorf("natsstore: session %s: its summary: %w", id, err)
			}
			li.NoState = false
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("natsstore: session %s: reading its summary: %w", id, err)
		}
		if _, err := st.leases.Get(ctx, id); err == nil {
			li.Running = true
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("natsstore: session %s: reading its lease: %w", id, err)
		}
		out = append(out, li)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// ReadJournal replays session id's journal without taking it.
func (st *Store) ReadJournal(id string, commit func(typ byte) bool, fn func(typ byte, payload []byte) error) error {
	if err := checkID(id); err != nil {
		return err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	g, _, err := st.readGen(ctx, id)
	if err != nil || g.Gen == 0 {
		return err
	}
	subj := st.subject(id, g.Gen)
	last, err := st.lastSeq(ctx, subj)
	if err != nil || last == 0 {
		return err
	}
	_, err = st.replay(subj, last, commit, fn)
	return err
}

// Remove deletes session id's state, taking its lease meanwhile: one
// held by another opener is refused (store.ErrSessionBusy).
func (st *Store) Remove(id string) error {
	if _, err := st.ReadMeta(id); err != nil {
		return err
	}
	l, err := st.take(id)
	if err != nil {
		return err
	}
	defer l.Unlock()
	return st.removeState(id)
}

// removeState deletes session id's journal, then its keys, its meta last:
// a removal cut short leaves a session listed, which a prune removes.
func (st *Store) removeState(id string) error {
	ctx, cancel := ctxOp()
	defer cancel()
	if err := st.stream.Purge(ctx, jetstream.WithPurgeSubject(st.prefix+".journal."+id+".>")); err != nil {
		return fmt.Errorf("natsstore: session %s: removing its journal: %w", id, err)
	}
	for _, k := range []string{sumKey(id), genKey(id), metaKey(id)} {
		if err := st.sessions.Purge(ctx, k); err != nil {
			return fmt.Errorf("natsstore: session %s: removing %s: %w", id, k, err)
		}
	}
	return nil
}
