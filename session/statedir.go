package session

import (
	"errors"
	"time"

	"github.com/airlock-dev/airlock/session/record"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/files"
)

// A durable session's state is kept by a store (package store); the local
// one (package files) keeps it in a directory under the sessions
// directory. These are the names airlock's commands use for them.

type (
	// Meta is what a session is for.
	Meta = store.Meta
	// Summary is a session's state in counts, for people.
	Summary = store.Summary
	// Listed is a session as airlock sessions list shows it.
	Listed = store.Listed
	// PruneOptions say which sessions Prune removes.
	PruneOptions = store.PruneOptions
	// Pruned is what Prune did.
	Pruned = store.Pruned
	// StateDir is one session's directory, locked by this process while
	// open.
	StateDir = files.Dir
)

var (
	// ErrSessionBusy: another running server has the session open.
	ErrSessionBusy = store.ErrSessionBusy
	// ErrNoSession: no session has that id.
	ErrNoSession = store.ErrNoSession
	// ErrNotOwnDir: what is at a session's path is not a directory of
	// its own.
	ErrNotOwnDir = store.ErrNotOwnDir
	// ErrStateMoved: the session's directory was removed or replaced
	// under the server that has it open.
	ErrStateMoved = store.ErrStateMoved
)

// CreateStateDir makes a new session's directory under root and locks it.
func CreateStateDir(root string, meta Meta) (*StateDir, error) {
	return files.Store{Root: root}.CreateDir(meta)
}

// OpenStateDir opens and locks the session id under root.
func OpenStateDir(root, id string) (*StateDir, error) { return files.Store{Root: root}.OpenDir(id) }

// Local is the store of the sessions in directory root (package files).
func Local(root string) store.Store { return files.Store{Root: root} }

// ListSessions lists st's sessions, newest first.
func ListSessions(st store.Store) ([]Listed, error) { return counting{st}.List() }

// Prune removes the sessions of st that o names.
func Prune(st store.Store, o PruneOptions) (Pruned, error) { return store.Prune(counting{st}, o) }

// Sweep removes the sessions of st that no server has open, whose work
// all left (pushed or discarded) or that never saved anything, and that
// were last changed before now-retention. It returns their ids.
func Sweep(st store.Store, retention time.Duration) []string {
	return store.Sweep(counting{st}, retention)
}

// counting is a store whose listing counts a session from its journal
// when its server died: the summary, rewritten about once a second, may
// be behind the journal, which is the truth.
type counting struct{ store.Store }

func (c counting) List() ([]Listed, error) {
	list, err := c.Store.List()
	for i := range list {
		if !list[i].Running && !list[i].Closed {
			c.recount(&list[i])
		}
	}
	return list, err
}

// recount counts l's state from its journal.
func (c counting) recount(l *Listed) {
	if in, err := readSaved(c.Store, l.ID); err == nil {
		in.Listed = *l
		in.Count()
		*l = in.Listed
	}
}

// LatestUnfinished finds the newest session of workerKey, made under
// binding b, that is not running and holds work that has not left, locks
// it and returns it; nil when there is none. Unfinished sessions of the
// worker made under another binding are passed over: others says why
// for each (a *BindingError, which names the server that resumes it).
func LatestUnfinished(from store.Store, workerKey string, b Binding) (d store.Lease, others []error, err error) {
	st := counting{from}
	list, err := st.List()
	if err != nil {
		return nil, nil, err
	}
	for _, l := range list {
		if l.WorkerKey != workerKey || l.Transport != "" || !l.Running && (l.NoState || !l.Unfinished()) {
			continue
		}
		if err := CheckOwner(l.Meta, workerKey, b); err != nil {
			if !l.Running {
				others = append(others, err)
			}
			continue
		}
		// One listed as running may be a killed server's, its lock held a
		// moment longer (see busyGrace), and its summary not yet written:
		// OpenStateDir tells, and then its journal.
		d, err := st.Open(l.ID)
		if errors.Is(err, ErrSessionBusy) {
			continue // another server has it open
		}
		if err != nil {
			return nil, others, err
		}
		if l.Running {
			st.recount(&l)
			if l.NoState || !l.Unfinished() {
				d.Unlock()
				continue
			}
		}
		if err := store.Claim(d, workerKey, b); err != nil {
			d.Unlock()
			return nil, others, err
		}
		return d, others, nil
	}
	return nil, others, nil
}

// errNoState: the journal holds no complete state (a session killed
// before its first save).
var errNoState = record.ErrNoState

// randomHex is n random bytes in hex.
func randomHex(n int) string { return store.RandomHex(n) }
