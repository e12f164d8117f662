package natsstore

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/session/store"
)

// holder is a lease entry's value: the holder's token (in its fences
// too) and the address its server gave as Options.Owner.
type holder struct {
	Token string `json:"token"`
	Owner string `json:"owner,omitempty"`
}

// entry is this lease's entry value.
func (l *lease) entry() []byte {
	data, _ := json.Marshal(holder{Token: l.token, Owner: l.st.owner}) // two strings always marshal
	return data
}

// readHolder reads an entry's value; one that is not JSON (a token
// alone, as entries were first written) is a token with no owner.
func readHolder(v []byte) holder {
	var h holder
	if json.Unmarshal(v, &h) != nil {
		return holder{Token: string(v)}
	}
	return h
}

// BusyError: another server holds the session's lease. It is a
// store.ErrSessionBusy; Owner is the address that server gave (its
// Options.Owner), "" when it gave none.
type BusyError struct {
	ID    string
	Owner string
}

func (e *BusyError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("session %s: %v", e.ID, store.ErrSessionBusy)
	}
	return fmt.Sprintf("session %s: %v at %s", e.ID, store.ErrSessionBusy, e.Owner)
}

func (e *BusyError) Unwrap() error { return store.ErrSessionBusy }

// busy is the BusyError for session id, naming its holder when the
// entry can be read.
func (st *Store) busy(id string) error {
	owner, _, _, _ := st.Holder(id) // the error is still "busy" without its owner
	return &BusyError{ID: id, Owner: owner}
}

// Holder reports who holds session id's lease now: the owner address
// its server gave, and the entry's revision (for Break); held is false
// when no one holds it. An id no session has is a store.ErrNoSession.
func (st *Store) Holder(id string) (owner string, rev uint64, held bool, err error) {
	if err := checkID(id); err != nil {
		return "", 0, false, err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	e, err := st.leases.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("natsstore: session %s: reading its lease: %w", id, err)
	}
	return readHolder(e.Value()).Owner, e.Revision(), true, nil
}

// ErrNotBroken: the lease Break was asked to end had changed (renewed,
// let go or taken by another) since its revision was read.
var ErrNotBroken = errors.New("the lease changed since it was read: its holder is alive")

// Break ends session id's lease at revision rev (read by Holder), so
// that a server that found the holder dead takes the session at once
// instead of waiting out the TTL. A holder that was in fact alive (cut
// off, not dead) writes nothing more: a new opener fences its journal.
// A lease renewed since rev is not broken (ErrNotBroken): its holder is
// alive.
func (st *Store) Break(id string, rev uint64) error {
	if err := checkID(id); err != nil {
		return err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	err := st.leases.Delete(ctx, id, jetstream.LastRevision(rev))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("session %s: %w", id, ErrNotBroken)
	}
	if err != nil {
		return fmt.Errorf("natsstore: session %s: breaking its lease: %w", id, err)
	}
	return nil
}
