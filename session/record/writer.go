package record

import (
	"bytes"
	"encoding/json"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/staging"
)

// State is what a session holds, as a Writer saves it.
type State struct {
	Live  *memfs.Snapshot
	Cps   []memfs.SavedCheckpoint
	Repos []string                     // the repositories, in the session's order ("" for a single one)
	Areas map[string]staging.AreaState // by repository
	Store *staging.Store               // where the objects Roots reach are read
	Roots []plumbing.Hash
	Sess  []byte // the session's own record (JSON), opaque here
}

// Writer remembers what the journal holds, so that each batch carries
// only what changed. It is not safe for concurrent use: its owner saves
// under its own lock.
type Writer struct {
	known map[plumbing.Hash]uint8 // in the journal: 1 alone, 2 with all it reaches
	// commits are the staged commits as their records last wrote them. A
	// commit's record is written again when the area holds another copy
	// of it: Advance gives the commits after a pushed one copies that
	// name their new base, under the same id.
	commits map[plumbing.Hash]*staging.Commit
	slots   map[string]*memfs.Snapshot
	live    *memfs.Snapshot
	cps     []memfs.SavedCheckpoint
	areas   map[string]staging.AreaState
	sess    []byte
	seq     uint64
}

// NewWriter is the writer of an empty journal.
func NewWriter() *Writer {
	return &Writer{known: map[plumbing.Hash]uint8{}, commits: map[plumbing.Hash]*staging.Commit{}}
}

// Seq is the number of the last state record written.
func (w *Writer) Seq() uint64 { return w.seq }

// Pending is a batch made but not yet known to be in the journal: Done
// makes the writer count it in once it is.
type Pending struct {
	full  bool
	added map[plumbing.Hash]uint8
	slots map[string]*memfs.Snapshot
	st    State
	seq   uint64
}

// Delta adds to b the records of what changed in st since the last batch
// (Done) and returns it pending; nil when nothing changed.
func (w *Writer) Delta(b *journal.Batch, st State, now time.Time) (*Pending, error) {
	added := map[plumbing.Hash]uint8{}
	rec := stateRec{Seq: w.seq + 1, Time: now}
	changed := false
	e := &encoder{w: w, b: b, known: w.known, added: added, prev: w.slots, cur: map[string]*memfs.Snapshot{}}
	if w.live == nil || !st.Live.Same(w.live) {
		rec.Live = e.snap("live", st.Live)
		changed = true
	} else {
		e.cur["live"] = st.Live
	}
	for _, name := range st.Repos {
		ast := st.Areas[name]
		if old, ok := w.areas[name]; ok && ast.Same(old) {
			e.keep(slotBase(name))
			e.keep(slotCommits(name))
			continue
		}
		rec.setArea(name, e.area(name, ast, false))
		changed = true
	}
	if err := e.objects(st.Store, st.Roots, false); err != nil {
		return nil, err
	}
	if list, ok := e.checkpoints(st.Cps); ok {
		rec.Cps = &list
		changed = true
	} else {
		e.keep("cp:")
	}
	if !bytes.Equal(st.Sess, w.sess) {
		rec.Sess = st.Sess
		changed = true
	}
	if !changed && b.Len() == 0 {
		return nil, nil
	}
	if err := addState(b, rec); err != nil {
		return nil, err
	}
	return &Pending{added: added, slots: e.cur, st: st, seq: rec.Seq}, nil
}

// Full adds to r the records of the whole of st: every object it reaches
// and one full state record, as a journal rewritten whole holds.
func (w *Writer) Full(r journal.Records, st State, now time.Time) (*Pending, error) {
	added := map[plumbing.Hash]uint8{}
	// What the new file holds is what encodeDelta checks against.
	e := &encoder{w: w, b: r, known: added, added: added, cur: map[string]*memfs.Snapshot{}}
	if err := e.objects(st.Store, st.Roots, true); err != nil {
		return nil, err
	}
	rec := stateRec{Seq: w.seq + 1, Time: now, Full: true}
	rec.Live = e.snap("live", st.Live)
	for _, name := range st.Repos {
		rec.setArea(name, e.area(name, st.Areas[name], true))
	}
	list, _ := e.checkpoints(st.Cps)
	rec.Cps = &list
	rec.Sess = st.Sess
	if err := addState(r, rec); err != nil {
		return nil, err
	}
	return &Pending{full: true, added: added, slots: e.cur, st: st, seq: rec.Seq}, nil
}

func addState(r journal.Records, rec stateRec) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	r.Add(recState, data)
	return nil
}

// Done counts p in: the journal holds it now.
func (w *Writer) Done(p *Pending) {
	if p.full {
		w.known = p.added
	} else {
		for h, d := range p.added {
			w.known[h] = max(w.known[h], d)
		}
	}
	w.setCommits(p.st.Areas)
	w.slots, w.live, w.cps, w.areas, w.sess, w.seq = p.slots, p.st.Live, p.st.Cps, p.st.Areas, p.st.Sess, p.seq
}

// ForgetSess makes the next batch write the session's own record whatever
// it holds.
func (w *Writer) ForgetSess() { w.sess = nil }

// ResumeWriter is the writer of the journal l was read from, whose
// state, installed in a session, is st.
func ResumeWriter(l *Loaded, st State) *Writer {
	w := NewWriter()
	for h, o := range l.objs {
		w.known[h] = 1
		if o.deep {
			w.known[h] = 2
		}
	}
	w.live, w.cps, w.areas, w.seq = st.Live, st.Cps, st.Areas, l.seq
	w.setCommits(st.Areas)
	w.slots = map[string]*memfs.Snapshot{"live": st.Live}
	for name, ast := range st.Areas {
		w.slots[slotBase(name)] = ast.Base.Snap
		for _, l := range ast.Chain {
			w.slots[slotCommits(name)+l.ID.String()] = l.Snap
		}
	}
	for _, cp := range st.Cps {
		w.slots["cp:"+cp.Name] = cp.Snap
	}
	return w
}

// setCommits records the staged commits as the areas hold them now.
func (w *Writer) setCommits(areas map[string]staging.AreaState) {
	clear(w.commits)
	for _, ast := range areas {
		for _, l := range ast.Chain {
			w.commits[l.ID] = l.Commit
		}
	}
}

// encoder writes a record's trees, each as a delta against the closest
// tree it can name.
type encoder struct {
	w     *Writer
	b     journal.Records
	known map[plumbing.Hash]uint8 // what the journal written to holds
	added map[plumbing.Hash]uint8
	prev  map[string]*memfs.Snapshot
	cur   map[string]*memfs.Snapshot
	order []string // cur's slots in the order computed
}

// keep carries the previous record's slots with prefix over unchanged.
func (e *encoder) keep(prefix string) {
	for name, sn := range e.prev {
		if len(name) >= len(prefix) && name[:len(prefix)] == prefix {
			e.cur[name] = sn
		}
	}
}

func (e *encoder) snap(name string, sn *memfs.Snapshot) *snapRec {
	defer func() { e.cur[name] = sn; e.order = append(e.order, name) }()
	for _, n := range e.order {
		if e.cur[n].Same(sn) {
			return &snapRec{From: n}
		}
	}
	if old, ok := e.prev[name]; ok && old.Same(sn) {
		return &snapRec{From: "prev:" + name}
	}
	for n, old := range e.prev {
		if old.Same(sn) {
			return &snapRec{From: "prev:" + n}
		}
	}
	// A delta against the same slot before, or the live tree: trees of
	// one session derive from one another, so it is what changed.
	from, ref := "empty", (*memfs.Snapshot)(nil)
	switch {
	case e.prev[name] != nil:
		from, ref = "prev:"+name, e.prev[name]
	case e.cur["live"] != nil:
		from, ref = "live", e.cur["live"]
	case e.prev["live"] != nil:
		from, ref = "prev:live", e.prev["live"]
	}
	return &snapRec{From: from, Delta: e.delta(memfs.DeltaOf(ref, sn))}
}

// objects adds every object roots reach that the journal lacks (all of
// them, for a rewrite).
func (e *encoder) objects(store *staging.Store, roots []plumbing.Hash, all bool) error {
	known := func(h plumbing.Hash, deep bool) bool {
		want := uint8(1)
		if deep {
			want = 2
		}
		return e.added[h] >= want || !all && e.known[h] >= want
	}
	return store.Walk(roots, known, func(o plumbing.EncodedObject, deep bool) error {
		data, err := staging.ObjectBytes(o)
		if err != nil {
			return err
		}
		flag := byte(0)
		d := uint8(1)
		if deep {
			flag, d = objDeep, 2
		}
		addObject(e.b, o.Type(), flag, o.Hash(), data)
		e.added[o.Hash()] = max(e.added[o.Hash()], d)
		return nil
	})
}

func addObject(b journal.Records, t plumbing.ObjectType, flag byte, h plumbing.Hash, data []byte) {
	b.Add(recObject, []byte{byte(t), flag}, h[:], data)
}

// delta turns memfs deltas into records, adding the blobs the journal
// lacks. The contents' ids are computed by a goroutine per core (a run
// that wrote ten thousand files hands over as many to hash).
func (e *encoder) delta(ds []memfs.Delta) []deltaRec {
	out := make([]deltaRec, len(ds))
	ids := make([]plumbing.Hash, len(ds))
	var todo []int
	for i, d := range ds {
		out[i] = deltaRec{Path: d.Path, Remove: d.Remove, Mode: uint32(d.Mode), Ino: d.Ino}
		if d.Remove || d.Mode.IsDir() {
			continue
		}
		if d.Lazy {
			out[i].Blob, out[i].Lazy, out[i].Size = plumbing.Hash(d.ID).String(), true, d.Size
			continue
		}
		// A version seeded from a tree knows its id: hash once.
		if ids[i] = plumbing.Hash(d.ID); ids[i].IsZero() {
			todo = append(todo, i)
		}
	}
	parallel(len(todo), func(k int) {
		i := todo[k]
		ids[i] = plumbing.ComputeHash(plumbing.BlobObject, ds[i].Data)
	})
	for i, d := range ds {
		if d.Remove || d.Mode.IsDir() || d.Lazy {
			continue
		}
		h := ids[i]
		if e.known[h] == 0 && e.added[h] == 0 {
			addObject(e.b, plumbing.BlobObject, objDeep, h, d.Data)
			e.added[h] = 2
		}
		out[i].Blob = h.String()
	}
	return out
}

// parallel calls fn(0) to fn(n-1), a goroutine per core.
func parallel(n int, fn func(int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// checkpoints returns the checkpoints' records, and whether any changed
// (a full record has them all).
func (e *encoder) checkpoints(cps []memfs.SavedCheckpoint) ([]cpRec, bool) {
	old := e.w.cps
	same := len(cps) == len(old) && e.prev != nil
	list := make([]cpRec, len(cps))
	for i, cp := range cps {
		name := "cp:" + cp.Name
		if sn, ok := e.prev[name]; ok && sn.Same(cp.Snap) && same && old[i].Name == cp.Name && old[i].Time.Equal(cp.Time) {
			list[i] = cpRec{Name: cp.Name, Time: cp.Time, Keep: true}
			e.cur[name] = cp.Snap
			continue
		}
		same = false
		list[i] = cpRec{Name: cp.Name, Time: cp.Time, Snap: e.snap(name, cp.Snap)}
	}
	return list, !same
}

func (e *encoder) area(repo string, st staging.AreaState, all bool) *areaRec {
	link := func(l staging.Link) linkRec {
		slot := slotBase(repo)
		if l.Commit != nil {
			slot = slotCommits(repo) + l.ID.String()
		}
		r := linkRec{ID: HexOf(l.ID), Tree: HexOf(l.Tree), View: HexOf(l.View), Paths: l.Paths, Snap: e.snap(slot, l.Snap)}
		if l.Commit != nil && (all || e.w.commits[l.ID] != l.Commit) {
			r.Commit = encodeCommit(l.Commit)
		}
		return r
	}
	rec := &areaRec{Base: link(st.Base)}
	for _, l := range st.Chain {
		rec.Chain = append(rec.Chain, link(l))
	}
	if st.Pulled != nil {
		pulled := append([]string{}, st.Pulled...)
		rec.Pulled = &pulled
	}
	for _, r := range st.Dropped {
		rec.Dropped = append(rec.Dropped, refusalRec{Path: r.Path, Rule: string(r.Rule), Why: r.Why})
	}
	return rec
}

func encodeCommit(c *staging.Commit) *commitRec {
	r := &commitRec{ID: HexOf(c.ID), Parent: HexOf(c.Parent), Base: HexOf(c.Base), Tree: HexOf(c.Tree),
		Message: c.Message, Author: c.Author, Committer: c.Committer, Created: c.Created}
	for _, id := range c.Replaces {
		r.Replaces = append(r.Replaces, HexOf(id))
	}
	for _, f := range c.Files {
		r.Files = append(r.Files, fileRec{Path: f.Path, Op: uint8(f.Op), Blob: HexOf(f.Blob), Size: f.Size,
			Mode: uint32(f.Mode), OldBlob: HexOf(f.OldBlob), OldMode: uint32(f.OldMode)})
	}
	return r
}
