package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/internal/natsconn"
	"github.com/airlock-dev/airlock/session/store"
)

// ErrLeaseLost: the server holding a session stopped renewing its lease
// in time (or the session's state was removed), and another may hold it
// now: it writes nothing more to the session.
var ErrLeaseLost = errors.New("the session's lease was lost: another airlock serve may have it now (reconnect the client: the session resumes from the store where it is held)")

// ErrFenced: another holder of the session opened its journal (or
// rewrote it) after this one: this one's writes are refused.
var ErrFenced = errors.New("another airlock serve took the session's journal over")

// lease is a session held through its entry in the leases bucket.
type lease struct {
	st    *Store
	id    string
	token string // this holder's, in its lease entry and its fences

	mu       sync.Mutex
	meta     store.Meta
	metaRev  uint64
	rev      uint64 // the lease entry's revision this holder wrote last
	lost     error  // why the lease is no longer this holder's
	over     error  // another holder took the session: for good
	renewed  time.Time
	stop     chan struct{}
	finished chan struct{}
	release  sync.Once // the Store's watch of the session, let go by Unlock
}

// take creates session id's lease entry: ErrSessionBusy when there is
// one (its holder renews it, or has not yet let it expire).
func (st *Store) take(id string) (*lease, error) {
	l := &lease{st: st, id: id, token: store.RandomHex(8)}
	if err := st.hold(id); err != nil {
		return nil, err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	sent := time.Now()
	rev, err := st.leases.Create(ctx, id, l.entry())
	if err != nil {
		st.release(id)
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, st.busy(id)
	}
	if err != nil {
		return nil, st.unreachable(fmt.Sprintf("session %s: taking its lease", id), err)
	}
	l.rev, l.renewed = rev, sent
	l.stop, l.finished = make(chan struct{}), make(chan struct{})
	go l.renew()
	return l, nil
}

// renew updates the lease entry at the revision held every third of the
// TTL. A conflict (another holder's entry, or none) loses the lease at
// once; a server out of reach loses it when the TTL has passed.
func (l *lease) renew() {
	defer close(l.finished)
	t := time.NewTicker(l.st.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.renewOnce()
	}
}

func (l *lease) renewOnce() {
	l.mu.Lock()
	rev, lost := l.rev, l.lost
	l.mu.Unlock()
	if lost != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.st.ttl/3)
	defer cancel()
	// The server dates the entry after this, so the lease lasts at
	// least a TTL from here: a holder that counts from here never
	// believes it holds a lease the server has let expire.
	sent := time.Now()
	nrev, err := l.st.leases.Update(ctx, l.id, l.entry(), rev)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		// Still this holder's entry, even if Here found the lease lost
		// meanwhile: Remake finds it at this revision.
		l.rev, l.renewed = nrev, sent
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyNotFound):
		l.lost = fmt.Errorf("session %s: %w (its entry changed under it)", l.id, ErrLeaseLost)
	case time.Since(l.renewed) >= l.st.ttl:
		l.lost = fmt.Errorf("session %s: %w (not renewed for %v: %v)", l.id, ErrLeaseLost, time.Since(l.renewed).Round(time.Millisecond), err)
	}
}

// stopRenewing ends the renewal (Unlock, and tests that play a holder
// that hangs).
func (l *lease) stopRenewing() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.finished
}

// held is nil while the lease is this holder's.
func (l *lease) held() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

func (l *lease) SessionID() string { return l.id }
func (l *lease) Where() string     { return l.st.where(l.id) }

func (l *lease) Info() store.Meta {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.meta
}

// SetInfo replaces the meta at the revision this holder read or wrote.
func (l *lease) SetInfo(m store.Meta) error {
	if err := l.held(); err != nil {
		return err
	}
	m.ID = l.id
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := ctxOp()
	defer cancel()
	rev, err := l.st.sessions.Update(ctx, metaKey(l.id), data, l.metaRev)
	if err != nil {
		return fmt.Errorf("natsstore: session %s: writing its meta: %w", l.id, err)
	}
	l.meta, l.metaRev = m, rev
	return nil
}

func (l *lease) OpenJournal(commit func(typ byte) bool, fn func(typ byte, payload []byte) error) (store.Journal, error) {
	return l.openJournal(commit, fn)
}

func (l *lease) WriteSummary(s store.Summary) error {
	if err := l.held(); err != nil {
		return err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	if _, err := l.st.sessions.Put(ctx, sumKey(l.id), data); err != nil {
		return fmt.Errorf("natsstore: session %s: writing its summary: %w", l.id, err)
	}
	return nil
}

// Here reports whether the session's meta is still the one this holder
// wrote or read, and its lease still its own. It asks the server
// nothing: it answers from the lease's renewals (renewed less than a TTL
// ago) and from what the Store's watch saw of the session's entries
// (another's write of its meta, its lease deleted or taken), so a change
// made by another is noticed as soon as the watch delivers it, within
// milliseconds while the server is reachable. doc.go says why that is
// safe.
func (l *lease) Here() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.st.newest(metaKey(l.id)); m.rev > l.metaRev {
		if m.gone {
			return fmt.Errorf("%w: session %s is gone from %s", store.ErrStateMoved, l.id, l.Where())
		}
		return fmt.Errorf("%w: session %s's meta was written by another", store.ErrStateMoved, l.id)
	}
	if e := l.st.newest(leaseKey(l.id)); l.lost == nil && e.rev > l.rev && (e.gone || e.token != l.token) {
		l.lost = fmt.Errorf("session %s: %w (its entry was deleted or taken)", l.id, ErrLeaseLost)
	}
	if l.lost == nil && time.Since(l.renewed) >= l.st.ttl {
		l.lost = fmt.Errorf("session %s: %w (not renewed for %v: NATS at %s did not answer in time)", l.id, ErrLeaseLost, time.Since(l.renewed).Round(time.Millisecond), natsconn.ConnectedURL(l.st.nc))
	}
	if l.lost != nil {
		return fmt.Errorf("%w: %w", store.ErrStateMoved, l.lost)
	}
	return nil
}

// Remake writes the meta again and takes the lease again where it is not
// this holder's: a lease another holds is refused (store.ErrSessionBusy),
// and so, for good, is a session another holder opened while this one's
// lease was lost (its copy is stale: ErrFenced).
func (l *lease) Remake() error {
	ctx, cancel := ctxOp()
	defer cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.over != nil {
		return l.over
	}
	// The session's sync loop calls this under the session's lock while
	// the lease is lost: with the connection down it would hold every
	// call up for the whole opTimeout.
	if !l.st.nc.IsConnected() {
		return l.st.unreachable(fmt.Sprintf("session %s: taking its lease again", l.id), nats.ErrDisconnected)
	}
	e, err := l.st.leases.Get(ctx, l.id)
	switch {
	case err == nil && e.Revision() == l.rev && readHolder(e.Value()).Token == l.token:
	case err == nil:
		return &BusyError{ID: l.id, Owner: readHolder(e.Value()).Owner}
	case errors.Is(err, jetstream.ErrKeyNotFound):
		sent := time.Now()
		rev, err := l.st.leases.Create(ctx, l.id, l.entry())
		if errors.Is(err, jetstream.ErrKeyExists) {
			return l.st.busy(l.id)
		}
		if err != nil {
			return l.st.unreachable(fmt.Sprintf("session %s: taking its lease again", l.id), err)
		}
		l.rev, l.renewed = rev, sent
	default:
		return l.st.unreachable(fmt.Sprintf("session %s: reading its lease", l.id), err)
	}
	// The lease is this holder's: no one opens the session meanwhile.
	// Whether another did while it was not, its entries tell.
	if err := l.takenOver(ctx); err != nil {
		return err
	}
	data, err := json.Marshal(l.meta)
	if err != nil {
		return err
	}
	rev, err := l.st.sessions.Put(ctx, metaKey(l.id), data)
	if err != nil {
		return l.st.unreachable(fmt.Sprintf("session %s: writing its meta again", l.id), err)
	}
	l.metaRev, l.lost = rev, nil
	return nil
}

// takenOver is an error when another holder opened the session's
// journal (the gen entry names the holder that did last) or wrote its
// meta since this one did: what this holder has in memory is then older
// than the store's, and writing it again would undo the other's writes.
// The lease is let go, and the holder writes nothing more. Entries that
// are gone (the state removed under the holder) are made again.
func (l *lease) takenOver(ctx context.Context) error {
	g, grev, err := l.st.readGen(ctx, l.id)
	if err != nil {
		return err
	}
	e, err := l.st.sessions.Get(ctx, metaKey(l.id))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return l.st.unreachable(fmt.Sprintf("session %s: reading its meta", l.id), err)
	}
	if (grev == 0 || g.Holder == l.token) && (err != nil || e.Revision() == l.metaRev) {
		return nil
	}
	_ = l.st.leases.Delete(ctx, l.id, jetstream.LastRevision(l.rev)) // best effort: it expires with the TTL
	l.over = fmt.Errorf("natsstore: session %s: %w while this server could not hold it: this server's copy is stale and writes nothing more; reconnect the client, and the session resumes from the store where it is held", l.id, ErrFenced)
	l.lost = l.over
	return l.over
}

// Remove deletes the session's state under its lease.
func (l *lease) Remove() error {
	if err := l.held(); err != nil {
		return err
	}
	return l.st.removeState(l.id)
}

// Unlock stops renewing the lease and deletes its entry, if it is still
// this holder's.
func (l *lease) Unlock() {
	l.stopRenewing()
	l.release.Do(func() { l.st.release(l.id) })
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return
	}
	ctx, cancel := ctxOp()
	defer cancel()
	// Best effort: an entry not deleted expires with the bucket's TTL.
	_ = l.st.leases.Delete(ctx, l.id, jetstream.LastRevision(l.rev))
	l.lost = fmt.Errorf("session %s: %w (let go)", l.id, ErrLeaseLost)
}
