package natsstore

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/internal/natsconn"
)

// watch is what a Store learns, without asking, of the entries of the
// sessions it holds: two key watches (the meta and gen entries in the
// sessions bucket, every entry of the leases bucket) whose changes are
// kept for the sessions held through this Store. Lease.Here and
// Journal.Here answer from it instead of reading the entries at each
// save (two round trips a call): see doc.go for why that is safe.
type watch struct {
	mu      sync.Mutex
	running bool
	ids     map[string]int  // sessions held through this Store: how many leases
	last    map[string]seen // "meta.ID", "gen.ID", "lease.ID": the newest change seen
}

// seen is the newest change a watch saw of one entry.
type seen struct {
	rev   uint64 // its revision: the bucket's stream sequence
	gone  bool   // deleted or purged
	token string // a lease entry's holder token
}

func leaseKey(id string) string { return "lease." + id }

// hold notes that a lease of session id is taken through this Store,
// starting the watches first if they are not running: a change made
// after the lease's entry is written is then seen.
func (st *Store) hold(id string) error {
	w := st.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.running {
		if err := st.startWatch(); err != nil {
			return fmt.Errorf("natsstore: watching the sessions' entries on %s: %w", natsconn.ConnectedURL(st.nc), err)
		}
		w.running = true
		w.ids, w.last = map[string]int{}, map[string]seen{}
	}
	w.ids[id]++
	return nil
}

// release undoes hold; what was seen of a session no lease holds is
// forgotten.
func (st *Store) release(id string) {
	w := st.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ids[id]--; w.ids[id] > 0 {
		return
	}
	delete(w.ids, id)
	for _, k := range []string{metaKey(id), genKey(id), leaseKey(id)} {
		delete(w.last, k)
	}
}

// startWatch starts the two watches (updates only: what was written
// before them is older than any entry a lease taken after them writes).
// They live as long as the Store's connection.
func (st *Store) startWatch() error {
	// Not a context that ends: the watches' subscriptions end with it.
	ctx := context.Background()
	sw, err := st.sessions.WatchFiltered(ctx, []string{"meta.*", "gen.*"}, jetstream.UpdatesOnly(), jetstream.MetaOnly())
	if err != nil {
		return err
	}
	lw, err := st.leases.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		_ = sw.Stop() // the first watch is not used: stopping it is tidying
		return err
	}
	go st.follow(sw, func(key string) (string, string) {
		_, id, _ := strings.Cut(key, ".")
		return id, key
	})
	go st.follow(lw, func(key string) (string, string) { return key, leaseKey(key) })
	return nil
}

// follow records each change kw delivers of a held session's entry;
// name maps an entry's key to its session's id and its key in w.last.
func (st *Store) follow(kw jetstream.KeyWatcher, name func(key string) (id, k string)) {
	w := st.watch
	for e := range kw.Updates() {
		if e == nil {
			continue
		}
		id, k := name(e.Key())
		s := seen{rev: e.Revision(), gone: e.Operation() != jetstream.KeyValuePut}
		if k == leaseKey(id) && !s.gone {
			s.token = readHolder(e.Value()).Token
		}
		w.mu.Lock()
		if w.ids[id] > 0 && s.rev > w.last[k].rev {
			w.last[k] = s
		}
		w.mu.Unlock()
	}
}

// newest is the newest change seen of entry k (zero when none).
func (st *Store) newest(k string) seen {
	w := st.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[k]
}
