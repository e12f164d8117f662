package session

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/staging"
)

// A durable session writes what it holds to a journal (package journal):
// after every call that changed the sandbox, one batch of records, written
// with pwritev(2) before the call answers. Records are of two types:
//
//	object  a git object (blob, tree, commit), in git's own format: its
//	        type and content, named by its SHA-1. Each object is written
//	        once; content-addressing makes the journal share a file's
//	        content between the workspace, checkpoints and commits.
//	state   what changed in the session's state, as JSON: the live tree as
//	        a delta against the previous record's, the checkpoints (each
//	        unchanged, or a delta against a tree of the same record), the
//	        staging area (commits, bases and views by id) and the
//	        session's own fields (where the base came from, published
//	        commits, checkpoints' bases, pushes waiting for review).
//
// A state record ends its batch: a batch cut short by a crash has none and
// is dropped whole when the journal is opened, so a call is in the journal
// all or not at all. When the journal has grown to twice what its state
// needs, it is rewritten whole (objects reachable now, and one full state
// record), atomically.

const (
	recObject byte = 1
	recState  byte = 2
)

// object record flags: the object was written with everything it reaches
// (a shallow commit is one kept for its id only, as Collect keeps a base's
// parents).
const objDeep byte = 1

// persister is a session's side of its journal. Its fields are guarded by
// Session.mu: every save runs under it.
type persister struct {
	dir *StateDir
	j   *journal.Journal

	known map[plumbing.Hash]uint8 // in the journal: 1 alone, 2 with all it reaches
	// commits are the staged commits as their records last wrote them. A
	// commit's record is written again when the area holds another copy
	// of it: Advance gives the commits after a pushed one copies that
	// name their new base, under the same id.
	commits map[plumbing.Hash]*staging.Commit
	slots   map[string]*memfs.Snapshot
	live    *memfs.Snapshot
	cps     []memfs.SavedCheckpoint
	areas   map[string]staging.AreaState // by repository ("" for the one of a single-repository session)
	sess    []byte
	seq     uint64
	// started is seq after a new session's first record; 0 for a resumed
	// one. A session still at it has saved nothing since it started.
	started uint64
	// compacted is the journal's size after its last rewrite.
	compacted int64

	sumMu   sync.Mutex
	summary Summary
	sumDone bool // summary written since it last changed
	// changed: a save since the summary was last counted (counting
	// walks the changes, so it is done by the sync loop, not per call).
	changed   bool
	summarize func() (Summary, bool)
	keep      func() // makes the state again if it was removed (vanish.go)
	// syncErr is the sync loop's last failed flush, not yet told to a
	// worker (Session.FlushErr); warn tells the operator at once.
	syncErr error
	warn    func(format string, args ...any)
	stop    chan struct{}
	stopped chan struct{}
}

type stateRec struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Full bool      `json:"full,omitempty"`
	Live *snapRec  `json:"live,omitempty"`
	Cps  *[]cpRec  `json:"cps,omitempty"`
	Area *areaRec  `json:"area,omitempty"`
	// Repos are a multi-repository session's areas, by repository (Area
	// is a single-repository session's); a record has those that changed.
	Repos map[string]*areaRec `json:"repos,omitempty"`
	Sess  json.RawMessage     `json:"sess,omitempty"`
}

// The slots of a repository's trees: its base, and its staged commits'
// workspace sides. A single-repository session's (name "") are "base"
// and "c:COMMIT"; a multi-repository session's carry the name.
func slotBase(repo string) string {
	if repo == "" {
		return "base"
	}
	return "base:" + repo
}

func slotCommits(repo string) string {
	if repo == "" {
		return "c:"
	}
	return "c:" + repo + ":"
}

// snapRec is a tree as a delta against another, named by its slot: a
// record's trees are its slots "live", "base", "c:COMMIT" (a staged
// commit's workspace side) and "cp:NAME", computed in that order; From
// names one computed before in the same record, or "prev:SLOT" as the
// record before left it, or "empty".
type snapRec struct {
	From  string     `json:"from"`
	Delta []deltaRec `json:"delta,omitempty"`
}

type deltaRec struct {
	Path   string `json:"p"`
	Remove bool   `json:"r,omitempty"`
	Mode   uint32 `json:"m,omitempty"`
	Blob   string `json:"b,omitempty"`
	Ino    uint64 `json:"i,omitempty"`
	// Lazy: Blob is a base's blob of Size bytes that the session reads
	// where it was pulled from (its sources); the journal has no copy.
	Lazy bool  `json:"z,omitempty"`
	Size int64 `json:"s,omitempty"`
}

type cpRec struct {
	Name string    `json:"name"`
	Time time.Time `json:"time"`
	Keep bool      `json:"keep,omitempty"`
	Snap *snapRec  `json:"snap,omitempty"`
}

type areaRec struct {
	Base    linkRec      `json:"base"`
	Chain   []linkRec    `json:"chain,omitempty"`
	Pulled  *[]string    `json:"pulled,omitempty"`
	Dropped []refusalRec `json:"dropped,omitempty"`
}

type linkRec struct {
	ID     string     `json:"id,omitempty"`
	Tree   string     `json:"tree,omitempty"`
	View   string     `json:"view,omitempty"`
	Paths  []string   `json:"paths,omitempty"`
	Snap   *snapRec   `json:"snap"`
	Commit *commitRec `json:"commit,omitempty"` // written once per commit
}

type commitRec struct {
	ID        string           `json:"id"`
	Parent    string           `json:"parent,omitempty"`
	Base      string           `json:"base,omitempty"`
	Tree      string           `json:"tree"`
	Message   string           `json:"message"`
	Author    object.Signature `json:"author"`
	Committer object.Signature `json:"committer"`
	Created   time.Time        `json:"created"`
	Files     []fileRec        `json:"files"`
}

type fileRec struct {
	Path    string `json:"p"`
	Op      uint8  `json:"op"`
	Blob    string `json:"b,omitempty"`
	Size    int64  `json:"s"`
	Mode    uint32 `json:"m"`
	OldBlob string `json:"ob,omitempty"`
	OldMode uint32 `json:"om,omitempty"`
}

type refusalRec struct {
	Path string `json:"path"`
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

// sessRec is the session's own state. A multi-repository session keeps
// each repository's base and checkpoints' bases in Repos.
type sessRec struct {
	Repos map[string]repoRec `json:"repos,omitempty"`

	Base *TargetSpec `json:"base,omitempty"`
	// Sources are where the store reads lazy files from (targets' ids,
	// newest first): a resumed session opens them again.
	Sources   []string             `json:"sources,omitempty"`
	BaseRef   string               `json:"base_ref,omitempty"`
	Published map[string]string    `json:"published,omitempty"`
	Cps       map[string][4]string `json:"cps,omitempty"`
	Pushes    []pushRec            `json:"pushes,omitempty"`
}

// repoRec is one repository's part of sessRec.
type repoRec struct {
	Base    *TargetSpec          `json:"base,omitempty"`
	BaseRef string               `json:"base_ref,omitempty"`
	Cps     map[string][4]string `json:"cps,omitempty"`
}

// pushRec is a push in flight.
type pushRec struct {
	ID      string      `json:"id"`
	Repo    string      `json:"repo,omitempty"`
	Spec    *TargetSpec `json:"spec"`
	Ref     string      `json:"ref"`
	Commit  string      `json:"commit"`
	Old     string      `json:"old,omitempty"`
	State   string      `json:"state"`
	Keys    []string    `json:"keys,omitempty"`
	Notes   []string    `json:"notes,omitempty"`
	Retries int         `json:"retries,omitempty"`
}

func hexOf(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

func hashOf(s string) (plumbing.Hash, error) {
	if s == "" {
		return plumbing.ZeroHash, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 20 {
		return plumbing.ZeroHash, fmt.Errorf("session state: %q is not an object id", s)
	}
	var h plumbing.Hash
	copy(h[:], b)
	return h, nil
}

// save writes what changed since the last save as one batch. It runs
// under s.mu; without a state directory it does nothing.
func (s *Session) saveLocked() error {
	p := s.pst
	if p == nil {
		return nil
	}
	var b journal.Batch
	added := map[plumbing.Hash]uint8{}
	rec := stateRec{Seq: p.seq + 1, Time: time.Now().UTC()}
	changed := false
	e := p.encoder(&b, added, p.slots)

	live, cps := s.ws.Saved()
	if p.live == nil || !live.Same(p.live) {
		rec.Live = e.snap("live", live)
		changed = true
	} else {
		e.cur["live"] = live
	}
	areas := s.areasLocked()
	for _, r := range s.repos {
		ast := areas[r.name]
		if old, ok := p.areas[r.name]; ok && ast.Same(old) {
			e.keep(slotBase(r.name))
			e.keep(slotCommits(r.name))
			continue
		}
		rec.setArea(r.name, p.encodeArea(e, r.name, ast, false))
		changed = true
	}
	if err := p.addObjects(&b, s.store, s.rootsLocked(), added, false); err != nil {
		return err
	}
	if list, ok := p.encodeCps(e, cps); ok {
		rec.Cps = &list
		changed = true
	} else {
		e.keep("cp:")
	}
	sj, err := json.Marshal(s.sessRecLocked())
	if err != nil {
		return err
	}
	if !bytes.Equal(sj, p.sess) {
		rec.Sess = sj
		changed = true
	}
	if !changed && b.Len() == 0 {
		return nil
	}
	if err := p.commit(&b, rec); err != nil {
		return err
	}
	for h, d := range added {
		p.known[h] = max(p.known[h], d)
	}
	p.setCommits(areas)
	p.slots, p.live, p.cps, p.areas, p.sess, p.seq = e.cur, live, cps, areas, sj, rec.Seq
	p.touch()
	// Written, but to the file the session's path names? (vanish.go)
	if rewrote, err := s.keepStateLocked(); rewrote || err != nil {
		return err
	}
	// The journal counts against the session's quota as its memory
	// does: rewritten whole once it holds twice what its state needs,
	// or more than the quota, so its size stays within a small multiple
	// of what the workspace may hold.
	if size := p.j.Size(); size > 2*p.compacted+4<<20 || size > s.ws.Limits().MaxTotalBytes+4<<20 && size > 2*p.compacted {
		return s.compactLocked()
	}
	return nil
}

// encoder writes a record's trees, each as a delta against the closest
// tree it can name.
type encoder struct {
	p     *persister
	b     journal.Records
	added map[plumbing.Hash]uint8
	prev  map[string]*memfs.Snapshot
	cur   map[string]*memfs.Snapshot
	order []string // cur's slots in the order computed
}

func (p *persister) encoder(b journal.Records, added map[plumbing.Hash]uint8, prev map[string]*memfs.Snapshot) *encoder {
	return &encoder{p: p, b: b, added: added, prev: prev, cur: map[string]*memfs.Snapshot{}}
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
	return &snapRec{From: from, Delta: e.p.encodeDelta(e.b, memfs.DeltaOf(ref, sn), e.added)}
}

func (p *persister) commit(b *journal.Batch, rec stateRec) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	b.Add(recState, data)
	if err := p.j.Write(b); err != nil {
		return fmt.Errorf("saving the session to %s failed (%w); the change is made in memory, but a crash now would lose it", p.dir.Path, err)
	}
	return nil
}

// compactLocked rewrites the journal as the session's state alone.
func (s *Session) compactLocked() error {
	p := s.pst
	known := p.known
	added := map[plumbing.Hash]uint8{}
	areas := s.areasLocked()
	live, cps := s.ws.Saved()
	var rec stateRec
	var sj []byte
	var e *encoder
	// Streamed to the new file: a large session is never held twice.
	err := p.j.RewriteWith(func(r journal.Records) error {
		if err := p.addObjects(r, s.store, s.rootsLocked(), added, true); err != nil {
			return err
		}
		p.known = added // what the new file holds, for encodeDelta's checks
		e = p.encoder(r, added, nil)
		rec = stateRec{Seq: p.seq + 1, Time: time.Now().UTC(), Full: true}
		rec.Live = e.snap("live", live)
		for _, r := range s.repos {
			rec.setArea(r.name, p.encodeArea(e, r.name, areas[r.name], true))
		}
		list, _ := p.encodeCps(e, cps)
		rec.Cps = &list
		var err error
		if sj, err = json.Marshal(s.sessRecLocked()); err != nil {
			return err
		}
		rec.Sess = sj
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		r.Add(recState, data)
		return nil
	})
	if err != nil {
		p.known = known
		return fmt.Errorf("writing the session's journal in %s failed: %w", p.dir.Path, err)
	}
	p.setCommits(areas)
	p.slots, p.live, p.cps, p.areas, p.sess, p.seq = e.cur, live, cps, areas, sj, rec.Seq
	p.compacted = p.j.Size()
	p.touch()
	return nil
}

// addObjects adds to b every object roots reach that the journal lacks
// (all of them, for a rewrite).
func (p *persister) addObjects(b journal.Records, store *staging.Store, roots []plumbing.Hash, added map[plumbing.Hash]uint8, all bool) error {
	known := func(h plumbing.Hash, deep bool) bool {
		want := uint8(1)
		if deep {
			want = 2
		}
		return added[h] >= want || !all && p.known[h] >= want
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
		addObject(b, o.Type(), flag, o.Hash(), data)
		added[o.Hash()] = max(added[o.Hash()], d)
		return nil
	})
}

func addObject(b journal.Records, t plumbing.ObjectType, flag byte, h plumbing.Hash, data []byte) {
	b.Add(recObject, []byte{byte(t), flag}, h[:], data)
}

// encodeDelta turns memfs deltas into records, adding the blobs the
// journal lacks. The contents' ids are computed by a goroutine per core
// (a run that wrote ten thousand files hands over as many to hash), and
// a batch is grown once for the objects it takes.
func (p *persister) encodeDelta(b journal.Records, ds []memfs.Delta, added map[plumbing.Hash]uint8) []deltaRec {
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
		if p.known[h] == 0 && added[h] == 0 {
			addObject(b, plumbing.BlobObject, objDeep, h, d.Data)
			added[h] = 2
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

// encodeCps returns the checkpoints' records, and whether any changed
// (a full record has them all).
func (p *persister) encodeCps(e *encoder, cps []memfs.SavedCheckpoint) ([]cpRec, bool) {
	same := len(cps) == len(p.cps) && e.prev != nil
	list := make([]cpRec, len(cps))
	for i, cp := range cps {
		name := "cp:" + cp.Name
		if old, ok := e.prev[name]; ok && old.Same(cp.Snap) && same && p.cps[i].Name == cp.Name && p.cps[i].Time.Equal(cp.Time) {
			list[i] = cpRec{Name: cp.Name, Time: cp.Time, Keep: true}
			e.cur[name] = cp.Snap
			continue
		}
		same = false
		list[i] = cpRec{Name: cp.Name, Time: cp.Time, Snap: e.snap(name, cp.Snap)}
	}
	return list, !same
}

// areasLocked is every repository's area as it stands.
func (s *Session) areasLocked() map[string]staging.AreaState {
	out := make(map[string]staging.AreaState, len(s.repos))
	for _, r := range s.repos {
		out[r.name] = r.area.Saved()
	}
	return out
}

// setArea puts a repository's area record where its kind of session keeps
// it.
func (rec *stateRec) setArea(repo string, a *areaRec) {
	if repo == "" {
		rec.Area = a
		return
	}
	if rec.Repos == nil {
		rec.Repos = map[string]*areaRec{}
	}
	rec.Repos[repo] = a
}

// setCommits records the staged commits as the areas hold them now.
func (p *persister) setCommits(areas map[string]staging.AreaState) {
	clear(p.commits)
	for _, ast := range areas {
		for _, l := range ast.Chain {
			p.commits[l.ID] = l.Commit
		}
	}
}

func (p *persister) encodeArea(e *encoder, repo string, st staging.AreaState, all bool) *areaRec {
	link := func(l staging.Link) linkRec {
		slot := slotBase(repo)
		if l.Commit != nil {
			slot = slotCommits(repo) + l.ID.String()
		}
		r := linkRec{ID: hexOf(l.ID), Tree: hexOf(l.Tree), View: hexOf(l.View), Paths: l.Paths, Snap: e.snap(slot, l.Snap)}
		if l.Commit != nil && (all || p.commits[l.ID] != l.Commit) {
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
	r := &commitRec{ID: hexOf(c.ID), Parent: hexOf(c.Parent), Base: hexOf(c.Base), Tree: hexOf(c.Tree),
		Message: c.Message, Author: c.Author, Committer: c.Committer, Created: c.Created}
	for _, f := range c.Files {
		r.Files = append(r.Files, fileRec{Path: f.Path, Op: uint8(f.Op), Blob: hexOf(f.Blob), Size: f.Size,
			Mode: uint32(f.Mode), OldBlob: hexOf(f.OldBlob), OldMode: uint32(f.OldMode)})
	}
	return r
}

func decodeCommit(r *commitRec) (*staging.Commit, error) {
	var err error
	h := func(s string) plumbing.Hash {
		v, e := hashOf(s)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	c := &staging.Commit{ID: h(r.ID), Parent: h(r.Parent), Base: h(r.Base), Tree: h(r.Tree),
		Message: r.Message, Author: r.Author, Committer: r.Committer, Created: r.Created}
	for _, f := range r.Files {
		c.Files = append(c.Files, staging.File{Path: f.Path, Op: change.Kind(f.Op), Blob: h(f.Blob), Size: f.Size,
			Mode: filemode.FileMode(f.Mode), OldBlob: h(f.OldBlob), OldMode: filemode.FileMode(f.OldMode)})
	}
	return c, err
}

func (s *Session) sessRecLocked() sessRec {
	r := sessRec{Sources: s.store.Sources()}
	if len(s.published) > 0 {
		r.Published = map[string]string{}
		for h, where := range s.published {
			r.Published[h.String()] = where
		}
	}
	for _, rp := range s.repos {
		rr := repoRec{Base: rp.base, BaseRef: rp.baseRef}
		for name, bases := range s.cps {
			if b, ok := bases[rp.name]; ok {
				if rr.Cps == nil {
					rr.Cps = map[string][4]string{}
				}
				rr.Cps[name] = [4]string{hexOf(b.base), hexOf(b.baseView), hexOf(b.tip), hexOf(b.view)}
			}
		}
		if rp.name == "" {
			r.Base, r.BaseRef, r.Cps = rr.Base, rr.BaseRef, rr.Cps
			continue
		}
		if r.Repos == nil {
			r.Repos = map[string]repoRec{}
		}
		r.Repos[rp.name] = rr
	}
	for _, id := range slices.Sorted(maps.Keys(s.pushes)) {
		p := s.pushes[id]
		pr := pushRec{ID: id, Repo: p.r.name, Spec: p.spec, Ref: p.ref, Commit: p.commit.ID.String(), Old: hexOf(p.req.Old),
			State: string(p.state), Notes: p.notes, Retries: p.retries}
		for _, k := range p.keys {
			pr.Keys = append(pr.Keys, k.commit.String())
		}
		r.Pushes = append(r.Pushes, pr)
	}
	return r
}

// loaded is a journal read back: the session's state as it was after the
// last complete call.
type loaded struct {
	ws      *memfs.Workspace
	ld      memfs.Loader // reads lazy files: the session's store
	objs    map[plumbing.Hash]rawObject
	slots   map[string]*memfs.Snapshot
	cps     []memfs.SavedCheckpoint
	areas   map[string]*areaRec // by repository, "" for a single one's
	commits map[plumbing.Hash]*staging.Commit
	sess    sessRec
	seq     uint64
	saved   time.Time // when the last record was written
}

type rawObject struct {
	t    plumbing.ObjectType
	deep bool
	data []byte
}

func isState(t byte) bool { return t == recState }

func (l *loaded) record(typ byte, payload []byte) error {
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

// apply replays one state record onto the state so far.
func (l *loaded) apply(rec stateRec) error {
	prev := l.slots
	if rec.Full {
		prev = nil
	}
	cur := map[string]*memfs.Snapshot{}
	build := func(name string, r *snapRec) (*memfs.Snapshot, error) {
		if r == nil {
			return nil, fmt.Errorf("%w: tree %s is missing", journal.ErrCorrupt, name)
		}
		var from *memfs.Snapshot
		switch {
		case r.From == "empty":
		case strings.HasPrefix(r.From, "prev:"):
			from = prev[r.From[5:]]
		default:
			from = cur[r.From]
		}
		if from == nil && r.From != "empty" {
			return nil, fmt.Errorf("%w: tree %s from %q, which the journal does not have", journal.ErrCorrupt, name, r.From)
		}
		ds := make([]memfs.Delta, len(r.Delta))
		for i, d := range r.Delta {
			ds[i] = memfs.Delta{Path: d.Path, Remove: d.Remove, Mode: fs.FileMode(d.Mode), Ino: d.Ino}
			if h, err := hashOf(d.Blob); err == nil {
				ds[i].ID = h // the journal's objects are checked against their ids on load
			}
			if d.Remove || ds[i].Mode.IsDir() {
				continue
			}
			h, err := hashOf(d.Blob)
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
		sn := from
		if len(ds) > 0 || from == nil {
			var err error
			if sn, err = l.ws.Apply(from, ds); err != nil {
				return nil, err
			}
		}
		cur[name] = sn
		return sn, nil
	}
	carry := func(prefix string) {
		for name, sn := range prev {
			if strings.HasPrefix(name, prefix) {
				cur[name] = sn
			}
		}
	}
	if rec.Live != nil {
		if _, err := build("live", rec.Live); err != nil {
			return err
		}
	} else {
		carry("live")
	}
	recs := rec.Repos
	if rec.Area != nil {
		recs = map[string]*areaRec{"": rec.Area}
	}
	if rec.Full || l.areas == nil {
		l.areas = map[string]*areaRec{}
	}
	for name := range l.areas {
		if recs[name] == nil {
			carry(slotBase(name))
			carry(slotCommits(name))
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
			if _, err := build(slot, lr.Snap); err != nil {
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
	if rec.Cps != nil {
		var cps []memfs.SavedCheckpoint
		for _, c := range *rec.Cps {
			name := "cp:" + c.Name
			if c.Keep {
				sn, ok := prev[name]
				if !ok {
					return fmt.Errorf("%w: checkpoint %q kept but never written", journal.ErrCorrupt, c.Name)
				}
				cur[name] = sn
				cps = append(cps, memfs.SavedCheckpoint{Name: c.Name, Time: c.Time, Snap: sn})
				continue
			}
			sn, err := build(name, c.Snap)
			if err != nil {
				return err
			}
			cps = append(cps, memfs.SavedCheckpoint{Name: c.Name, Time: c.Time, Snap: sn})
		}
		l.cps = cps
	} else {
		carry("cp:")
	}
	if cur["live"] == nil {
		return fmt.Errorf("%w: no live tree", journal.ErrCorrupt)
	}
	if rec.Sess != nil {
		var sr sessRec
		if err := json.Unmarshal(rec.Sess, &sr); err != nil {
			return fmt.Errorf("%w: the session's record: %v", journal.ErrCorrupt, err)
		}
		l.sess = sr
	}
	l.slots, l.seq, l.saved = cur, rec.Seq, rec.Time
	return nil
}

// errNoState: the journal holds no complete state (a session killed
// before its first save).
var errNoState = errors.New("the session's journal holds no saved state")
