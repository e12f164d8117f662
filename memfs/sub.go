package memfs

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs/internal/resolve"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// Sub is the part of a workspace under one directory, seen as a workspace
// of its own: what a repository of a multi-repository session is to its
// staging area. Its snapshots are of that directory's subtree, with paths
// relative to it; its base is the workspace's base at that directory, and
// setting it changes nothing else of the workspace's base. Several Subs of
// one workspace (sibling directories) change independently, while the
// workspace keeps one live tree, one set of checkpoints and one quota.
//
// A workspace is used whole (Workspace's own Seed, SetBase, Restore...) or
// through its Subs, not both.
type Sub struct {
	w     *Workspace
	dir   string
	comps []string
}

// subKeep is what one Sub keeps beyond its base: its snapshots (subtree
// roots), held as whole trees grafted into the workspace's base (see
// regraftLocked).
type subKeep struct {
	comps []string
	keep  []*tree.Node
}

// Sub returns the part of the workspace under dir, a clean relative path
// the guard and the deny list accept, making the directory (in the live
// tree and the base) if it is missing. Directories of two Subs may not
// contain one another.
func (w *Workspace) Sub(dir string) (*Sub, error) {
	comps, err := pathguard.CheckPath(dir)
	if err != nil {
		return nil, withOp(err, "sub")
	}
	if e := w.deny.CheckComps(dir, comps); e != nil {
		return nil, withOp(e, "sub")
	}
	dir = strings.Join(comps, "/")
	w.mu.Lock()
	defer w.mu.Unlock()
	for other := range w.subs {
		if other == dir || strings.HasPrefix(dir, other+"/") || strings.HasPrefix(other, dir+"/") {
			return nil, fmt.Errorf("memfs: %s and %s would overlap: the directories of a workspace's parts may not contain one another", dir, other)
		}
	}
	if n := tree.Lookup(w.cur.root, comps); n == nil {
		if err := w.mkdirAllLocked(resolve.Worker, dir, 0o755); err != nil {
			return nil, err
		}
	} else if n.Kind != tree.KindDir {
		return nil, pathErr("sub", dir, fmt.Errorf("is not a directory"))
	}
	if tree.Lookup(w.base.root, comps) == nil {
		// The base gets the live tree's very directory (empty now): no
		// change shows, and nothing is counted twice.
		w.freeze()
		w.base.root = graftNode(w, w.base.root, comps, tree.Lookup(w.cur.root, comps))
	}
	if w.subs == nil {
		w.subs = map[string]*subKeep{}
	}
	w.subs[dir] = &subKeep{comps: comps}
	return &Sub{w: w, dir: dir, comps: comps}, nil
}

// Dir is the Sub's directory in the workspace.
func (s *Sub) Dir() string { return s.dir }

// graftNode returns root with the entry at comps replaced by n (a
// directory), making missing parents: a frozen path copy, O(depth).
func graftNode(w *Workspace, root *tree.Node, comps []string, n *tree.Node) *tree.Node {
	t := w.builder(root)
	if _, err := t.Put(comps, n, true); err != nil {
		// Only a file in the way of a parent fails; a Sub's parents are
		// directories the guard keeps (its directory is never a file:
		// see Sub), so this is a broken invariant, not bad input.
		panic(fmt.Sprintf("memfs: grafting %s: %v", strings.Join(comps, "/"), err))
	}
	return t.Root
}

// of is the subtree at comps of root: a new empty directory when there is
// none.
func (s *Sub) of(root *tree.Node) *tree.Node {
	if n := tree.Lookup(root, s.comps); n != nil && n.Kind == tree.KindDir {
		return n
	}
	return &tree.Node{Kind: tree.KindDir, Perm: 0o755, Ino: s.w.nextIno.Add(1), Kids: tree.EmptyKids}
}

// Of is the Sub's part of a whole-workspace snapshot (a checkpoint's).
func (s *Sub) Of(whole *Snapshot) *Snapshot { return &Snapshot{root: s.of(whole.root)} }

// Graft returns whole with the Sub's directory replaced by part.
func (s *Sub) Graft(whole, part *Snapshot) (*Snapshot, error) {
	if part.root == nil || part.root.Kind != tree.KindDir {
		return nil, fmt.Errorf("memfs: grafting %s: not a directory's snapshot", s.dir)
	}
	return &Snapshot{root: graftNode(s.w, whole.root, s.comps, part.root)}, nil
}

// Base returns the state the Sub's change tracking compares against.
func (s *Sub) Base() *Snapshot {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	return &Snapshot{root: s.of(s.w.base.root)}
}

// Snapshot freezes the live tree and returns the Sub's part of it.
func (s *Sub) Snapshot() *Snapshot {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.w.freeze()
	return &Snapshot{root: s.of(s.w.cur.root)}
}

// Changes lists the changes under the Sub's directory since its base,
// with paths relative to it. Like Workspace.Changes, its cost is
// proportional to the paths touched there.
func (s *Sub) Changes() []Change {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	return s.changesLocked()
}

func (s *Sub) changesLocked() []Change {
	w := s.w
	prefix := s.dir + "/"
	var out []Change
	it := w.cur.dirty.Iterator()
	it.Seek(prefix)
	for !it.Done() {
		p, _, _ := it.Next()
		if !strings.HasPrefix(p, prefix) {
			break
		}
		if c, ok := tree.DiffPath(w.base.root, w.cur.root, p); ok {
			c.Path = p[len(prefix):]
			out = append(out, c)
		}
	}
	return out
}

// SnapshotChanges is Snapshot and Changes from the same instant.
func (s *Sub) SnapshotChanges() (*Snapshot, []Change) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.w.freeze()
	return &Snapshot{root: s.of(s.w.cur.root)}, s.changesLocked()
}

// Overlay is Workspace.Overlay: it works on snapshots alone.
func (s *Sub) Overlay(parent, src *Snapshot, paths []string) (*Snapshot, error) {
	return s.w.Overlay(parent, src, paths)
}

// NewSnapshot is Workspace.NewSnapshot for the Sub's directory: files are
// relative to it, and the guard, the deny list and the symlink policy
// judge them where they are in the workspace.
func (s *Sub) NewSnapshot(files []SeedFile) (*Snapshot, []Refused, error) {
	prefixed := make([]SeedFile, len(files))
	for i, f := range files {
		f.Path = s.dir + "/" + f.Path
		prefixed[i] = f
	}
	whole, refused, err := s.w.NewSnapshot(prefixed)
	if err != nil {
		return nil, nil, err
	}
	for i := range refused {
		refused[i].Path = strings.TrimPrefix(refused[i].Path, s.dir+"/")
	}
	return &Snapshot{root: s.of(whole.root)}, refused, nil
}

// Seed makes files the content of the Sub's directory, in the live tree
// and as its base, and returns what it refused (see Workspace.Seed). The
// rest of the workspace and the checkpoints stay. It fails, changing
// nothing, with ErrQuotaExceeded when the workspace would hold too much.
func (s *Sub) Seed(files []SeedFile) ([]Refused, error) {
	snap, refused, err := s.NewSnapshot(files)
	if err != nil {
		return nil, err
	}
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freeze()
	if err := w.restoreLocked(&Snapshot{root: graftNode(w, w.cur.root, s.comps, snap.root)}); err != nil {
		return nil, err
	}
	s.setBaseLocked(snap.root, nil)
	return refused, nil
}

// SetBase makes base the state the Sub's change tracking compares against
// (the workspace's base changes at the Sub's directory only), and keep the
// further snapshots the Sub's owner holds on to, replacing those it kept
// before; other Subs' stay.
func (s *Sub) SetBase(base *Snapshot, keep ...*Snapshot) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	roots := make([]*tree.Node, len(keep))
	for i, k := range keep {
		roots[i] = k.root
	}
	s.setBaseLocked(base.root, roots)
}

func (s *Sub) setBaseLocked(base *tree.Node, keep []*tree.Node) {
	w := s.w
	w.subs[s.dir].keep = keep
	next := graftNode(w, w.base.root, s.comps, base)
	w.setBaseLocked(&Snapshot{root: next}, w.regraftLocked(next))
	// setBaseLocked tallies new roots against the old base; the grafts of
	// the other Subs' snapshots are new roots each time, so the tally is
	// made exact here rather than left to grow.
	w.recount()
}

// regraftLocked is every Sub's kept snapshots as whole trees: each grafted
// into base, so that they line up with the live tree and share everything
// outside their directory with the base (the held tally walks only where
// roots differ).
func (w *Workspace) regraftLocked(base *tree.Node) []*Snapshot {
	var out []*Snapshot
	for _, sk := range w.subs {
		for _, k := range sk.keep {
			out = append(out, &Snapshot{root: graftNode(w, base, sk.comps, k)})
		}
	}
	return out
}

// Restore makes the Sub's directory of the live tree exactly s (see
// Workspace.Restore); the rest of the workspace stays.
func (s *Sub) Restore(snap *Snapshot) error {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freeze()
	return w.restoreLocked(&Snapshot{root: graftNode(w, w.cur.root, s.comps, snap.root)})
}

// ApplyFrom is Workspace.ApplyFrom within the Sub's directory: paths are
// relative to it, and src is a snapshot of it.
func (s *Sub) ApplyFrom(src *Snapshot, paths []string) error {
	prefixed := make([]string, len(paths))
	for i, p := range paths {
		prefixed[i] = s.dir + "/" + p
	}
	empty := &tree.Node{Kind: tree.KindDir, Perm: 0o755, Kids: tree.EmptyKids}
	whole := &Snapshot{root: graftNode(s.w, empty, s.comps, src.root)}
	if err := s.w.ApplyFrom(whole, prefixed); err != nil {
		return err
	}
	// ApplyFrom kept the grafts of the kept snapshots made against the
	// base before it; make them share the new one.
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.w.retained = s.w.retained[:0]
	for _, k := range s.w.regraftLocked(s.w.base.root) {
		s.w.retained = append(s.w.retained, k.root)
	}
	s.w.recount()
	return nil
}

// CheckDeny judges p, relative to the Sub's directory, by the deny list,
// where it is in the workspace.
func (s *Sub) CheckDeny(p string) error { return s.w.deny.Check(s.dir + "/" + p) }

// CheckDeny judges p by the workspace's deny list.
func (w *Workspace) CheckDeny(p string) error { return w.deny.Check(p) }
