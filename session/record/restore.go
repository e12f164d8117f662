package record

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/staging"
)

// Restored is a loaded journal's state as a session installs it: its
// trees interned (each shares what it shared before it was written down,
// so the quotas count each version once), its areas whole, and every
// object the journal holds, checked against its id.
type Restored struct {
	Live    *memfs.Snapshot
	Cps     []memfs.SavedCheckpoint
	Areas   []staging.AreaState // in the order of the repositories asked
	Objects *staging.Store
	// Roots are the objects the areas need (bases, commits, trees,
	// views); the session adds its own.
	Roots []plumbing.Hash
}

// Restore is l's state for the repositories repos (which must be those
// the journal holds).
func (l *Loaded) Restore(repos []string) (*Restored, error) {
	snaps := []*memfs.Snapshot{l.slots["live"]}
	for _, cp := range l.cps {
		snaps = append(snaps, cp.Snap)
	}
	at := make([]int, len(repos))
	for k, name := range repos {
		ar := l.areas[name]
		if ar == nil {
			return nil, fmt.Errorf("%w: no record of repository %q", journal.ErrCorrupt, name)
		}
		at[k] = len(snaps)
		for i, lr := range append([]linkRec{ar.Base}, ar.Chain...) {
			slot := slotBase(name)
			if i > 0 {
				slot = slotCommits(name) + lr.ID
			}
			sn := l.slots[slot]
			if sn == nil {
				return nil, fmt.Errorf("%w: no tree for %s", journal.ErrCorrupt, slot)
			}
			snaps = append(snaps, sn)
		}
	}
	in := memfs.Intern(snaps...)
	out := &Restored{Live: in[0], Cps: make([]memfs.SavedCheckpoint, len(l.cps)), Objects: staging.NewStore(1 << 62)}
	for i, cp := range l.cps {
		out.Cps[i] = memfs.SavedCheckpoint{Name: cp.Name, Time: cp.Time, Snap: in[1+i]}
	}
	for h, o := range l.objs {
		if got, err := out.Objects.PutRaw(o.t, o.data); err != nil || got != h {
			return nil, fmt.Errorf("%w: object %s does not hash to its id", journal.ErrCorrupt, h)
		}
	}
	for k, name := range repos {
		ar := l.areas[name]
		n := 1 + len(ar.Chain)
		st, err := l.areaState(ar, in[at[k]:at[k]+n])
		if err != nil {
			return nil, err
		}
		out.Areas = append(out.Areas, st)
		for _, lk := range append([]staging.Link{st.Base}, st.Chain...) {
			out.Roots = append(out.Roots, lk.ID, lk.Tree, lk.View)
		}
	}
	return out, nil
}

// areaState turns a repository's area record, with its links' trees,
// back into the area's state.
func (l *Loaded) areaState(ar *areaRec, snaps []*memfs.Snapshot) (staging.AreaState, error) {
	st := staging.AreaState{}
	for i, lr := range append([]linkRec{ar.Base}, ar.Chain...) {
		id, err1 := HashOf(lr.ID)
		tree, err2 := HashOf(lr.Tree)
		view, err3 := HashOf(lr.View)
		if err := errors.Join(err1, err2, err3); err != nil {
			return st, err
		}
		link := staging.Link{ID: id, Tree: tree, View: view, Snap: snaps[i], Paths: lr.Paths}
		if i == 0 {
			st.Base = link
			continue
		}
		c, ok := l.commits[id]
		if !ok {
			return st, fmt.Errorf("%w: staged commit %s has no record", journal.ErrCorrupt, id)
		}
		link.Commit = c
		st.Chain = append(st.Chain, link)
	}
	if ar.Pulled != nil {
		st.Pulled = append([]string{}, (*ar.Pulled)...)
	}
	for _, r := range ar.Dropped {
		st.Dropped = append(st.Dropped, staging.Refusal{Path: r.Path, Rule: pathguard.Rule(r.Rule), Why: r.Why})
	}
	return st, nil
}

// Repo is what the journal holds of repository name, for a person to
// read: the commit its work stands on, its staged commits, and the tree
// of its tip (the last staged commit's, or the base's).
func (l *Loaded) Repo(name string) (base plumbing.Hash, staged []*staging.Commit, tip *memfs.Snapshot, err error) {
	ar := l.areas[name]
	if ar == nil {
		return base, nil, nil, fmt.Errorf("%w: no record of repository %q", journal.ErrCorrupt, name)
	}
	if base, err = HashOf(ar.Base.ID); err != nil {
		return base, nil, nil, err
	}
	tip = l.slots[slotBase(name)]
	for _, lr := range ar.Chain {
		h, err := HashOf(lr.ID)
		if err != nil {
			return base, nil, nil, err
		}
		c, ok := l.commits[h]
		if !ok {
			return base, nil, nil, fmt.Errorf("%w: staged commit %s has no record", journal.ErrCorrupt, lr.ID)
		}
		staged = append(staged, c)
		tip = l.slots[slotCommits(name)+lr.ID]
	}
	if tip == nil {
		return base, nil, nil, fmt.Errorf("%w: the session's trees are missing", journal.ErrCorrupt)
	}
	return base, staged, tip, nil
}

// PutObjects puts every object the journal holds into st.
func (l *Loaded) PutObjects(st *staging.Store) error {
	for _, o := range l.objs {
		if _, err := st.PutRaw(o.t, o.data); err != nil {
			return err
		}
	}
	return nil
}
