package staging

import (
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
)

// This file is what a durable session needs of the area and the store:
// the area's state as plain values (Saved) and put back (Resume), and the
// objects that state reaches (Walk).

// Link is one commit of a saved area (or its base).
type Link struct {
	Commit *Commit // nil for the base
	ID     plumbing.Hash
	Tree   plumbing.Hash
	View   plumbing.Hash
	Snap   *memfs.Snapshot // the workspace-side state; content equal to View
	Paths  []string
}

// AreaState is an area's whole state.
type AreaState struct {
	Base    Link
	Chain   []Link
	Pulled  []string // nil: all of the base
	Dropped []Refusal
}

// Same reports whether s and o are the same state: the same commits over
// the same snapshots. Every change to an area makes new snapshots, so
// this is a cheap test for "changed since".
func (s AreaState) Same(o AreaState) bool {
	if len(s.Chain) != len(o.Chain) || len(s.Pulled) != len(o.Pulled) || (s.Pulled == nil) != (o.Pulled == nil) ||
		len(s.Dropped) != len(o.Dropped) {
		return false
	}
	same := func(a, b Link) bool {
		return a.ID == b.ID && a.Tree == b.Tree && a.View == b.View && a.Commit == b.Commit &&
			(a.Snap == nil) == (b.Snap == nil) && (a.Snap == nil || a.Snap.Same(b.Snap))
	}
	if !same(s.Base, o.Base) {
		return false
	}
	for i := range s.Chain {
		if !same(s.Chain[i], o.Chain[i]) {
			return false
		}
	}
	for i := range s.Pulled {
		if s.Pulled[i] != o.Pulled[i] {
			return false
		}
	}
	return true
}

func (l link) saved() Link {
	return Link{Commit: l.c, ID: l.id, Tree: l.tree, View: l.view, Snap: l.snap, Paths: l.paths}
}

// Saved returns the area's state.
func (a *Area) Saved() AreaState {
	a.mu.RLock()
	defer a.mu.RUnlock()
	st := AreaState{Base: a.base.saved(), Dropped: append([]Refusal(nil), a.dropped...)}
	if a.pulled != nil {
		st.Pulled = append([]string{}, a.pulled...)
	}
	for _, l := range a.chain {
		st.Chain = append(st.Chain, l.saved())
	}
	return st
}

// Resume makes st the area's state, as a durable session saved it, and the
// tip's snapshot the workspace's base. The objects st names must be in
// the store; Resume checks that each commit and view is.
func (a *Area) Resume(st AreaState) error {
	check := func(what string, l Link) error {
		if l.Snap == nil {
			return fmt.Errorf("staging: resume: the %s has no snapshot", what)
		}
		for _, h := range []plumbing.Hash{l.ID, l.Tree, l.View} {
			if !h.IsZero() && a.store.HasEncodedObject(h) != nil {
				return fmt.Errorf("staging: resume: the %s needs object %s, which the store lacks", what, h)
			}
		}
		return nil
	}
	if err := check("base", st.Base); err != nil {
		return err
	}
	chain := make([]link, len(st.Chain))
	for i, l := range st.Chain {
		if err := check("staged commit "+shortid.Hash(l.ID), l); err != nil {
			return err
		}
		if l.Commit == nil || l.Commit.ID != l.ID {
			return fmt.Errorf("staging: resume: staged commit %s has no record", shortid.Hash(l.ID))
		}
		chain[i] = link{c: l.Commit, id: l.ID, tree: l.Tree, view: l.View, snap: l.Snap, paths: l.Paths}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.base = link{id: st.Base.ID, tree: st.Base.Tree, view: st.Base.View, snap: st.Base.Snap}
	a.chain = chain
	a.pulled = nil
	if st.Pulled != nil {
		a.pulled = append([]string{}, st.Pulled...)
	}
	a.dropped = append([]Refusal(nil), st.Dropped...)
	a.ws.SetBase(a.tip().snap, a.keep()...)
	return nil
}

// Walk calls fn for every object roots reach, as Collect counts reaching
// (commits reach their trees and, shallowly, their parents), skipping
// what known says is already had: known(h, deep) is true when h, and with
// deep everything it reaches, needs no visit. Objects the store does not
// hold itself are skipped, blobs its sources have among them.
func (s *Store) Walk(roots []plumbing.Hash, known func(h plumbing.Hash, deep bool) bool, fn func(o plumbing.EncodedObject, deep bool) error) error {
	return s.reach(roots, known, func(_ plumbing.Hash, o plumbing.EncodedObject, deep bool) error { return fn(o, deep) }, true)
}

// reach calls fn for every object held that roots reach (a commit its tree
// and, shallowly, its parents; a tree its entries but gitlinks; a tag its
// target), once shallow at most and once deep, skipping what known (when
// not nil) says needs no visit. An object that does not decode ends the
// walk with its error when strict, and reaches nothing otherwise.
func (s *Store) reach(roots []plumbing.Hash, known func(h plumbing.Hash, deep bool) bool, fn func(h plumbing.Hash, o plumbing.EncodedObject, deep bool) error, strict bool) error {
	seen := map[plumbing.Hash]uint8{}
	var visit func(h plumbing.Hash, deep bool) error
	visit = func(h plumbing.Hash, deep bool) error {
		if h.IsZero() || seen[h] == 2 || seen[h] == 1 && !deep || known != nil && known(h, deep) {
			return nil
		}
		o, ok := s.held(h) // what sources have is theirs to keep
		if !ok {
			return nil
		}
		if !deep {
			seen[h] = 1
			return fn(h, o, false)
		}
		seen[h] = 2
		if err := fn(h, o, true); err != nil {
			return err
		}
		next, err := s.reaches(o)
		if err != nil && strict {
			return err
		}
		for _, n := range next {
			if err := visit(n.h, n.deep); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range roots {
		if err := visit(r, true); err != nil {
			return err
		}
	}
	return nil
}

type reached struct {
	h    plumbing.Hash
	deep bool
}

// reaches lists what object o reaches, in order.
func (s *Store) reaches(o plumbing.EncodedObject) ([]reached, error) {
	switch o.Type() {
	case plumbing.CommitObject:
		c, err := object.DecodeCommit(s, o)
		if err != nil {
			return nil, err
		}
		out := []reached{{c.TreeHash, true}}
		for _, p := range c.ParentHashes {
			out = append(out, reached{p, false})
		}
		return out, nil
	case plumbing.TreeObject:
		t, err := object.DecodeTree(s, o)
		if err != nil {
			return nil, err
		}
		out := make([]reached, 0, len(t.Entries))
		for _, e := range t.Entries {
			if e.Mode != filemode.Submodule {
				out = append(out, reached{e.Hash, true})
			}
		}
		return out, nil
	case plumbing.TagObject:
		t, err := object.DecodeTag(s, o)
		if err != nil {
			return nil, err
		}
		return []reached{{t.Target, true}}, nil
	}
	return nil, nil
}

// PutRaw stores an object of type t with content data (which the store
// keeps without a copy: it must never change) under its id, which is
// computed and returned.
func (s *Store) PutRaw(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	return s.SetEncodedObject(&rawObject{t: t, h: plumbing.ComputeHash(t, data), data: data})
}

// ObjectBytes returns an object's content: the store's own bytes, without
// a copy, for the objects it keeps that way (which must not be modified),
// else a copy read from the object.
func ObjectBytes(o plumbing.EncodedObject) ([]byte, error) {
	if r, ok := o.(*rawObject); ok {
		return r.data, nil
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}
