package store

import (
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/session/journal"
)

// Store keeps sessions' state beyond a process.
type Store interface {
	// Create makes a new session's state, held (its ID and Created are
	// set here).
	Create(m Meta) (Lease, error)
	// Open takes the session id: ErrNoSession when there is none,
	// ErrSessionBusy when another opener holds it.
	Open(id string) (Lease, error)
	// ReadMeta reads what session id records, without taking it.
	ReadMeta(id string) (Meta, error)
	// List lists the sessions, newest first: a session whose holder died
	// is listed with the summary it last wrote.
	List() ([]Listed, error)
	// ReadJournal replays session id's journal without taking it (a dead
	// session is read for a person): fn gets each record up to the last
	// commit record.
	ReadJournal(id string, commit func(typ byte) bool, fn func(typ byte, payload []byte) error) error
	// Remove deletes session id's state; one held by another opener is
	// refused (ErrSessionBusy).
	Remove(id string) error
}

// Lease is one session's state, held by this process until Unlock: no
// other opener gets it meanwhile, and one that died lets it go.
type Lease interface {
	SessionID() string
	// Where says where the state is kept, for people (a directory, for
	// the local store).
	Where() string
	Info() Meta
	// SetInfo replaces the session's Meta (it keeps its ID).
	SetInfo(m Meta) error
	// OpenJournal opens the session's journal, calling fn for each
	// record up to the last commit record; a torn tail after it (a
	// batch a crash cut short) is dropped.
	OpenJournal(commit func(typ byte) bool, fn func(typ byte, payload []byte) error) (Journal, error)
	// WriteSummary replaces the session's summary.
	WriteSummary(s Summary) error
	// Here reports whether the state is still the one this lease holds:
	// nil, or an error (ErrStateMoved) that says what became of it. A
	// store that learns of changes by a watch (not by reading its state
	// at each call) may answer nil for a short while after another
	// changed the state: it notices within seconds at most.
	Here() error
	// Remake makes the session's place again after Here failed (its
	// Meta written again, its hold taken again); the caller rewrites the
	// journal. A place taken by something else is refused.
	Remake() error
	// Remove deletes the session's state while it is held (a session
	// that changed nothing is not kept).
	Remove() error
	// Unlock lets the session go.
	Unlock()
}

// Journal is a session's journal as a Store keeps it: records of a type
// byte and a payload, appended a batch at a time. *journal.Journal is
// the local store's.
type Journal interface {
	// Write appends the batch; once it returns, the records survive the
	// process being killed.
	Write(b *journal.Batch) error
	// RewriteWith replaces the journal's whole content with what fill
	// adds, atomically: a crash leaves the old or the new.
	RewriteWith(fill func(journal.Records) error) error
	// Sync makes what was written survive the machine stopping.
	Sync() error
	// Size is how many bytes the journal takes.
	Size() int64
	// Here reports whether the journal is still the one written.
	Here() error
	// Close syncs and closes it.
	Close() error
}

// ErrSessionBusy: another running server has the session open.
var ErrSessionBusy = errors.New("the session is open in another airlock serve")

// ErrNoSession: no session has that id.
var ErrNoSession = errors.New("no such session")

// ErrNotOwnDir: what is at a session's place is not its own (a symbolic
// link, say); airlock neither resumes nor writes a session through it.
var ErrNotOwnDir = errors.New("not a directory of its own")

// ErrStateMoved: the session's state was removed or replaced under the
// server that has it open.
var ErrStateMoved = errors.New("the session's directory was removed or replaced")

// Claim checks that a server of worker key with binding b may resume the
// session l holds (CheckOwner), and binds a session saved before
// bindings to it.
func Claim(l Lease, key string, b Binding) error {
	m := l.Info()
	if err := CheckOwner(m, key, b); err != nil {
		return err
	}
	if m.Binding != nil {
		return nil
	}
	m.Binding = &b
	if err := l.SetInfo(m); err != nil {
		return fmt.Errorf("session %s: recording which server it belongs to: %w", m.ID, err)
	}
	return nil
}
