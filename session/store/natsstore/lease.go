package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/session/store"
)

// ErrLeaseLost: the server holding a session stopped renewing its lease
// in time (or the session's state was removed), and another may hold it
// now: it writes nothing more to the session.
var ErrLeaseLost = errors.New("the session's lease was lost: another airlock serve may have it now")

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
	renewed  time.Time
	stop     chan struct{}
	finished chan struct{}
}

// take creates session id's lease entry: ErrSessionBusy when there is
// one (its holder renews it, or has not yet let it expire).
func (st *Store) take(id string) (*lease, error) {
	l := &lease{st: st, id: id, token: store.RandomHex(8)}
	ctx, cancel := ctxOp()
	defer cancel()
	rev, err := st.leases.Create(ctx, id, l.entry())
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, st.busy(id)
	}
	if err != nil {
		return nil, fmt.Errorf("natsstore: session %s: taking its lease: %w", id, err)
	}
	l.rev, l.renewed = rev, time.Now()
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
	nrev, err := l.st.leases.Update(ctx, l.id, l.entry(), rev)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.rev, l.renewed = nrev, time.Now()
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
// wrote or read, and its lease still its own.
func (l *lease) Here() error {
	ctx, cancel := ctxOp()
	defer cancel()
	e, err := l.st.sessions.Get(ctx, metaKey(l.id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("%w: session %s is gone from %s", store.ErrStateMoved, l.id, l.Where())
	}
	if err != nil {
		return fmt.Errorf("natsstore: session %s: %w", l.id, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Revision() != l.metaRev {
		return fmt.Errorf("%w: session %s's meta was written by another", store.ErrStateMoved, l.id)
	}
	if l.lost != nil {
		return fmt.Errorf("%w: %w", store.ErrStateMoved, l.lost)
	}
	return nil
}

// Remake writes the meta again and takes the lease again where it is not
// this holder's: a lease another holds is refused (store.ErrSessionBusy).
func (l *lease) Remake() error {
	ctx, cancel := ctxOp()
	defer cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	e, err := l.st.leases.Get(ctx, l.id)
	switch {
	case err == nil && e.Revision() == l.rev && readHolder(e.Value()).Token == l.token:
	case err == nil:
		return &BusyError{ID: l.id, Owner: readHolder(e.Value()).Owner}
	case errors.Is(err, jetstream.ErrKeyNotFound):
		rev, err := l.st.leases.Create(ctx, l.id, l.entry())
		if errors.Is(err, jetstream.ErrKeyExists) {
			return l.st.busy(l.id)
		}
		if err != nil {
			return fmt.Errorf("natsstore: session %s: taking its lease again: %w", l.id, err)
		}
		l.rev, l.lost, l.renewed = rev, nil, time.Now()
	default:
		return fmt.Errorf("natsstore: session %s: reading its lease: %w", l.id, err)
	}
	data, err := json.Marshal(l.meta)
	if err != nil {
		return err
	}
	rev, err := l.st.sessions.Put(ctx, metaKey(l.id), data)
	if err != nil {
		return fmt.Errorf("natsstore: session %s: writing its meta again: %w", l.id, err)
	}
	l.metaRev = rev
	return nil
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
