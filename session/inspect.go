package session

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/session/record"
	"github.com/airlock-dev/airlock/session/rescue"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/staging"
)

type (
	// Inspection is a saved session read back for a person, without
	// resuming it.
	Inspection = rescue.Inspection
	// PendingPush is a push a saved session had in flight.
	PendingPush = rescue.PendingPush
)

// ErrExportTarget: where an export would write is not an empty directory.
var ErrExportTarget = rescue.ErrExportTarget

// Inspect reads session id of st.
func Inspect(st store.Store, id string) (*Inspection, error) {
	l, err := store.Listing(st, id)
	if err != nil {
		return nil, err
	}
	in, err := readSaved(st, id)
	if err != nil {
		return nil, err
	}
	in.Listed = l
	if !l.Running && !l.Closed {
		in.Count()
	}
	return in, nil
}

// journalReader is the part of a store that reads a session's journal
// without taking it.
type journalReader interface {
	ReadJournal(id string, commit func(typ byte) bool, fn func(typ byte, payload []byte) error) error
}

// readSaved reads session id's journal into an Inspection (without its
// listing).
func readSaved(st journalReader, id string) (*Inspection, error) {
	ws, err := memfs.New(memfs.WithLimits(memfs.Limits{MaxFileBytes: 1 << 40, MaxTotalBytes: 1 << 50, MaxFiles: 1 << 30, MaxDirs: 1 << 30, MaxCheckpoints: 1 << 20}))
	if err != nil {
		return nil, err
	}
	in := &Inspection{Objects: staging.NewStore(1 << 62)}
	ld := record.NewLoaded(ws, in.Objects)
	if err := st.ReadJournal(id, record.IsCommit, ld.Record); err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	if ld.Empty() {
		return nil, fmt.Errorf("session %s: %w", id, errNoState)
	}
	sess, err := decodeSess(ld)
	if err != nil {
		return nil, err
	}
	in.Live, in.Published, in.Saved = ld.Live(), sess.Published, ld.Saved()
	if sources := sess.Sources; len(sources) > 0 {
		// Files of the base not read before the session ended are read
		// from where they were pulled.
		in.Attach = func(st *staging.Store) { attachSources(context.Background(), st, sources) }
	}
	if err := ld.PutObjects(in.Objects); err != nil {
		return nil, err
	}
	if in.Live == nil {
		return nil, fmt.Errorf("%w: the session's trees are missing", journal.ErrCorrupt)
	}
	for _, name := range ld.Repos() {
		base, staged, tip, err := ld.Repo(name)
		if err != nil {
			return nil, err
		}
		in.Staged = append(in.Staged, staged...)
		// The changes are what differs from each repository's tip, as
		// the session's own areas keep it.
		if name == "" {
			in.Base = base
			ws.SetBase(tip)
			continue
		}
		sub, err := ws.Sub(name)
		if err != nil {
			return nil, err
		}
		sub.SetBase(tip)
	}
	if err := ws.Resume(in.Live, ld.Checkpoints()); err != nil {
		return nil, err
	}
	in.Changes = ws.Changes()
	in.Checkpoints = ws.Checkpoints()
	for _, p := range sess.Pushes {
		target := ""
		if p.Spec != nil {
			target = p.Spec.String()
		}
		in.Pushes = append(in.Pushes, PendingPush{Request: p.ID, Commit: p.Commit, Target: target, Ref: p.Ref, State: p.State})
	}
	return in, nil
}
