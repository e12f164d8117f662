package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/staging"
)

// Loaded is a journal read back: the session's state as it was after the
// last complete call. Record takes the journal's records in order.
type Loaded struct {
	ws      *memfs.Workspace
	ld      memfs.Loader // reads lazy files: the session's store
	objs    map[plumbing.Hash]rawObject
	slots   map[string]*memfs.Snapshot
	cps     []memfs.SavedCheckpoint
	areas   map[string]*areaRec // by repository, "" for a single one's
	commits map[plumbing.Hash]*staging.Commit
	sess    json.RawMessage
	seq     uint64
	saved   time.Time // when the last record was written
}

type rawObject struct {
	t    plumbing.ObjectType
	deep bool
	data []byte
}

// NewLoaded reads a journal's trees into ws; lazy files are read through
// ld (nil: a journal with lazy files is refused).
func NewLoaded(ws *memfs.Workspace, ld memfs.Loader) *Loaded {
	return &Loaded{ws: ws, ld: ld, objs: map[plumbing.Hash]rawObject{}, commits: map[plumbing.Hash]*staging.Commit{}}
}

// Empty reports whether the journal held no complete state.
func (l *Loaded) Empty() bool { return l.seq == 0 || len(l.areas) == 0 }

// Seq is the number of the last state record.
func (l *Loaded) Seq() uint64 { return l.seq }

// Saved is when the last state record was written.
func (l *Loaded) Saved() time.Time { return l.saved }

// Sess is the session's own record as the last state record that had
// one left it (JSON).
func (l *Loaded) Sess() json.RawMessage { return l.sess }

// Repos are the repositories the journal holds, sorted.
func (l *Loaded) Repos() []string { return slices.Sorted(maps.Keys(l.areas)) }

// Live is the workspace's tree.
func (l *Loaded) Live() *memfs.Snapshot { return l.slots["live"] }

// Checkpoints are the workspace's checkpoints.
func (l *Loaded) Checkpoints() []memfs.SavedCheckpoint { return l.cps }

// Record takes the journal's next record.
func (l *Loaded) Record(typ byte, payload []byte) error {
	switch typ {
	case recObject:
		if len(payload) < 22 {
			return fmt.Errorf("%w: an object record of %d bytes", journal.ErrCorrupt, len(payload))
		}
		var h plumbing.Hash
		copy(h[:], payload[2:22])
		o := l.objs[h]
		o.t = plumbing.ObjectType(payload[0])
		o.deep = o.deep || payload[1]&objDeep != 0
		if o.data == nil {
			o.data = bytes.Clone(payload[22:])
			if o.data == nil {
				o.data = []byte{}
			}
		}
		l.objs[h] = o
		return nil
	case recState:
		var rec stateRec
		if err := json.Unmarshal(payload, &rec); err != nil {
			return fmt.Errorf("%w: a state record: %v", journal.ErrCorrupt, err)
		}
		return l.apply(rec)
	}
	return fmt.Errorf("%w: a record of unknown type %d", journal.ErrCorrupt, typ)
}

// replay is one state record being applied: the trees it builds (cur)
// from those of the record before (prev) and its own.
type replay struct {
	l    *Loaded
	prev map[string]*memfs.Snapshot
	cur  map[string]*memfs.Snapshot
}

// apply replays one state record onto the state so far.
func (l *Loaded) apply(rec stateRec) error {
	r := &replay{l: l, prev: l.slots, cur: map[string]*memfs.Snapshot{}}
	if rec.Full {
		r.prev = nil
	}
	if rec.Live != nil {
		if _, err := r.build("live", rec.Live); err != nil {
			return err
		}
	} else {
		r.carry("live")
	}
	if err := r.areas(rec); err != nil {
		return err
	}
	if err := r.checkpoints(rec.Cps); err != nil {
		return err
	}
	if r.cur["live"] == nil {
		return fmt.Errorf("%w: no live tree", journal.ErrCorrupt)
	}
	if rec.Sess != nil {
		if !json.Valid(rec.Sess) {
			return fmt.Errorf("%w: the session's record is not JSON", journal.ErrCorrupt)
		}
		l.sess = rec.Sess
	}
	l.slots, l.seq, l.saved = r.cur, rec.Seq, rec.Time
	return nil
}

// carry takes the previous record's slots with prefix over unchanged.
func (r *replay) carry(prefix string) {
	for name, sn := range r.prev {
		if strings.HasPrefix(name, prefix) {
			r.cur[name] = sn
		}
	}
}

// build makes the tree of slot name from its record.
func (r *replay) build(name string, sr *snapRec) (*memfs.Snapshot, error) {
	if sr == nil {
		return nil, fmt.Errorf("%w: tree %s is missing", journal.ErrCorrupt, name)
	}
	var from *memfs.Snapshot
	switch {
	case sr.From == "empty":
	case strings.HasPrefix(sr.From, "prev:"):
		from = r.prev[sr.From[5:]]
	default:
		from = r.cur[sr.From]
	}
	if from == nil && sr.From != "empty" {
		return nil, fmt.Errorf("%w: tree %s from %q, which the journal does not have", journal.ErrCorrupt, name, sr.From)
	}
	ds, err := r.l.deltas(sr.Delta)
	if err != nil {
		return nil, err
	}
	sn := from
	if len(ds) > 0 || from == nil {
		if sn, err = r.l.ws.Apply(from, ds); err != nil {
			return nil, err
		}
	}
	r.cur[name] = sn
	return sn, nil
}

// deltas turns delta records back into memfs deltas, their contents from
// the journal's objects (or, lazy, from the loader).
func (l *Loaded) deltas(recs []deltaRec) ([]memfs.Delta, error) {
	ds := make([]memfs.Delta, len(recs))
	for i, d := range recs {
		ds[i] = memfs.Delta{Path: d.Path, Remove: d.Remove, Mode: fs.FileMode(d.Mode), Ino: d.Ino}
		if h, err := HashOf(d.Blob); err == nil {
			ds[i].ID = h // the journal's objects are checked against their ids on load
		}
		if d.Remove || ds[i].Mode.IsDir() {
			continue
		}
		h, err := HashOf(d.Blob)
		if err != nil {
			return nil, err
		}
		if d.Lazy {
			if l.ld == nil {
				return nil, fmt.Errorf("%w: %s is a lazy file, and nothing can read it here", journal.ErrCorrupt, d.Path)
			}
			ds[i].Lazy, ds[i].Size, ds[i].From = true, d.Size, l.ld
			continue
		}
		o, ok := l.objs[h]
		if !ok {
			return nil, fmt.Errorf("%w: %s needs blob %s, which the journal does not have", journal.ErrCorrupt, d.Path, d.Blob)
		}
		ds[i].Data = o.data
	}
	return ds, nil
}

// areas replays the record's staging areas.
func (r *replay) areas(rec stateRec) error {
	l := r.l
	recs := rec.Repos
	if rec.Area != nil {
		recs = map[string]*areaRec{"": rec.Area}
	}
	if rec.Full || l.areas == nil {
		l.areas = map[string]*areaRec{}
	}
	for name := range l.areas {
		if recs[name] == nil {
			r.carry(slotBase(name))
			r.carry(slotCommits(name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(recs)) {
		ar := recs[name]
		if ar == nil {
			return fmt.Errorf("%w: repository %q has an empty record", journal.ErrCorrupt, name)
		}
		for i, lr := range append([]linkRec{ar.Base}, ar.Chain...) {
			slot := slotBase(name)
			if i > 0 {
				slot = slotCommits(name) + lr.ID
			}
			if _, err := r.build(slot, lr.Snap); err != nil {
				return err
			}
			if lr.Commit != nil {
				c, err := decodeCommit(lr.Commit)
				if err != nil {
					return err
				}
				l.commits[c.ID] = c
			}
		}
		l.areas[name] = ar
	}
	return nil
}

// checkpoints replays the record's checkpoints (nil: unchanged).
func (r *replay) checkpoints(recs *[]cpRec) error {
	if recs == nil {
		r.carry("cp:")
		return nil
	}
	var cps []memfs.SavedCheckpoint
	for _, c := range *recs {
		name := "cp:" + c.Name
		if c.Keep {
			sn, ok := r.prev[name]
			if !ok {
				return fmt.Errorf("%w: checkpoint %q kept but never written", journal.ErrCorrupt, c.Name)
			}
			r.cur[name] = sn
			cps = append(cps, memfs.SavedCheckpoint{Name: c.Name, Time: c.Time, Snap: sn})
			continue
		}
		sn, err := r.build(name, c.Snap)
		if err != nil {
			return err
		}
		cps = append(cps, memfs.SavedCheckpoint{Name: c.Name, Time: c.Time, Snap: sn})
	}
	r.l.cps = cps
	return nil
}

func decodeCommit(r *commitRec) (*staging.Commit, error) {
	var err error
	h := func(s string) plumbing.Hash {
		v, e := HashOf(s)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	c := &staging.Commit{ID: h(r.ID), Parent: h(r.Parent), Base: h(r.Base), Tree: h(r.Tree),
		Message: r.Message, Author: r.Author, Committer: r.Committer, Created: r.Created}
	for _, id := range r.Replaces {
		c.Replaces = append(c.Replaces, h(id))
	}
	for _, f := range r.Files {
		c.Files = append(c.Files, staging.File{Path: f.Path, Op: change.Kind(f.Op), Blob: h(f.Blob), Size: f.Size,
			Mode: filemode.FileMode(f.Mode), OldBlob: h(f.OldBlob), OldMode: filemode.FileMode(f.OldMode)})
	}
	return c, err
}
