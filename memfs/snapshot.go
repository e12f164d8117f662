package memfs

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"syscall"

	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs/internal/resolve"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// Snapshot is one state of a workspace's tree, frozen: it never changes, so
// it may be read without locks while the workspace goes on changing. It
// shares every unchanged file and directory with the trees around it, so
// taking one is O(1) and keeping one costs only what differs.
type Snapshot struct {
	root *tree.Node
}

// Snapshot freezes the live tree and returns it.
func (w *Workspace) Snapshot() *Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freeze()
	return &Snapshot{root: w.cur.root}
}

// SnapshotChanges freezes the live tree and returns it with the changes
// since the base, both from the same instant: no write can fall between
// them.
func (w *Workspace) SnapshotChanges() (*Snapshot, []Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freeze()
	return &Snapshot{root: w.cur.root}, w.changesLocked()
}

// Same reports whether s and o are the same state (not merely equal
// content).
func (s *Snapshot) Same(o *Snapshot) bool { return s.root == o.root }

// Base returns the state change tracking compares against.
func (w *Workspace) Base() *Snapshot {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return &Snapshot{root: w.base.root}
}

// Lookup returns the file or symlink at path p, a canonical path as
// CheckPath returns it. Symlinks are not followed.
func (s *Snapshot) Lookup(p string) (Entry, bool) {
	if p == "" {
		return Entry{}, false
	}
	n := tree.Lookup(s.root, strings.Split(p, "/"))
	if n == nil || n.Kind == tree.KindDir {
		return Entry{}, false
	}
	return tree.EntryOf(p, n), true
}

// IsDir reports whether p is a directory in the snapshot.
func (s *Snapshot) IsDir(p string) bool {
	if p == "" {
		return true
	}
	n := tree.Lookup(s.root, strings.Split(p, "/"))
	return n != nil && n.Kind == tree.KindDir
}

// Walk calls fn for every file and symlink, directory by directory in name
// order, and stops at the first error fn returns.
func (s *Snapshot) Walk(fn func(Entry) error) error {
	return tree.WalkEntries(s.root, "", fn)
}

// ResolveIn looks name up in s as Stat looks it up in the live tree (the
// path guard, the deny list, symlinks followed under the worker's policy;
// "." is the root), with Stat's errors. It returns the canonical path of
// what name leads to, as Walk names it ("" for the root), and whether that
// is a directory. A snapshot is frozen, so this takes no lock.
func (w *Workspace) ResolveIn(s *Snapshot, name string) (string, bool, error) {
	f, err := w.resolveFrom(s.root, "stat", name, true, true)
	if err != nil {
		return "", false, err
	}
	if f.Node == nil {
		return "", false, notExist("stat", name)
	}
	return f.Path(), f.Node.Kind == tree.KindDir, nil
}

// WalkVisible is Walk from the directory dir of s down (a canonical path
// as ResolveIn returns it, "" for the root), as the worker sees it: what
// the deny list covers is left out, a directory with everything below it,
// as ReadDir leaves it out. Entries come in Walk's order, with canonical
// paths. It takes no lock.
func (w *Workspace) WalkVisible(s *Snapshot, dir string, fn func(Entry) error) error {
	var comps []string
	if dir != "" {
		comps = strings.Split(dir, "/")
	}
	n := tree.Lookup(s.root, comps)
	switch {
	case n == nil:
		return notExist("walk", dir)
	case n.Kind != tree.KindDir:
		return pathErr("walk", dir, syscall.ENOTDIR)
	}
	canon := make([]string, len(comps), len(comps)+8)
	for i, c := range comps {
		canon[i] = pathguard.Canonical(c)
	}
	if len(canon) > 0 && w.deny.MatchCanon(canon) != "" {
		return w.deny.CheckComps(dir, comps)
	}
	return w.walkVisible(n, dir, canon, fn)
}

// walkVisible walks n, a directory the deny list leaves visible, whose
// canonical names (as the deny list compares them) are canon. A parent
// that is visible has no denied prefix, so a child is hidden exactly when
// a pattern matches its whole path: one Match a child instead of
// MatchPrefix over every prefix, and each name folded once.
func (w *Workspace) walkVisible(n *tree.Node, prefix string, canon []string, fn func(Entry) error) error {
	for it := n.Kids.Iterator(); !it.Done(); {
		name, c, _ := it.Next()
		cc := append(canon, pathguard.Canonical(name))
		if w.deny.MatchWhole(cc) != "" {
			continue
		}
		p := name
		if prefix != "" {
			p = prefix + "/" + name
		}
		var err error
		if c.Kind == tree.KindDir {
			err = w.walkVisible(c, p, cc, fn)
		} else {
			err = fn(tree.EntryOf(p, c))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Usage is what the snapshot holds, counting shared versions once.
func (s *Snapshot) Usage() Usage { return tree.CountUnique(s.root) }

// Diff lists the files and symlinks that differ from s to to, sorted by
// path. Subtrees the two share are skipped, so comparing snapshots that
// derive from one another costs what differs between them.
func (s *Snapshot) Diff(to *Snapshot) []Change {
	var out []Change
	tree.DiffNodes(s.root, to.root, "", &out)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// NewSnapshot builds a frozen tree from files under the same rules as the
// worker's own operations: entries the path guard, the deny list or the
// symlink policy refuse, files over the per-file limit and entries that
// clash with an earlier one are left out and returned with the reason. A
// tree over the workspace's quotas is refused whole with ErrQuotaExceeded.
// The workspace itself does not change; see Seed and Restore.
func (w *Workspace) NewSnapshot(files []SeedFile) (*Snapshot, []Refused, error) {
	root := &tree.Node{Kind: tree.KindDir, Perm: 0o755, Mtime: w.now(), Ino: w.nextIno.Add(1), Kids: tree.EmptyKids}
	t := w.builder(root)
	var refused []Refused
	var links []SeedFile
	// The entries go into plain maps first and each directory's sorted
	// map is built once at the end: linking them one by one into the
	// persistent tree would copy a path of it per file.
	var top tree.SeedTree
	for _, sf := range files {
		comps, n, err := t.seedNode(sf)
		if err == nil {
			if err = top.Add(comps, n); err == syscall.ENOTDIR {
				err = pathErr("seed", sf.Path, fmt.Errorf("a parent of it is a file: %w", err))
			} else if err != nil {
				err = pathErr("seed", sf.Path, err)
			}
		}
		if err != nil {
			refused = append(refused, Refused{Path: sf.Path, Err: err})
			continue
		}
		if sf.Mode&fs.ModeSymlink != 0 {
			links = append(links, sf)
		}
	}
	top.Build(&t.Txn, root)
	// Links are judged once the whole tree is there, so that one link
	// through another is judged by where it really leads.
	for _, l := range links {
		comps := strings.Split(l.Path, "/")
		if err := w.checkLink(resolve.Worker, t.Root, l.Path, comps, string(l.Data)); err != nil {
			refused = append(refused, Refused{Path: l.Path, Err: withOp(err, "seed")})
			if _, err := t.Put(comps, nil, false); err != nil {
				return nil, nil, err
			}
		}
	}
	s := &Snapshot{root: t.Root}
	lim := w.limits
	if u := s.Usage(); u.Bytes > lim.MaxTotalBytes || u.Files > lim.MaxFiles || u.Dirs > lim.MaxDirs {
		return nil, refused, &Error{Op: "seed", Path: ".", Err: ErrQuotaExceeded, Detail: fmt.Sprintf(
			"the files hold %s in %d files and %d directories; the workspace allows %s, %d files and %d directories",
			bytesize.Format(u.Bytes), u.Files, u.Dirs, bytesize.Format(lim.MaxTotalBytes), lim.MaxFiles, lim.MaxDirs)}
	}
	return s, refused, nil
}

// builder is a transaction that builds a frozen tree from root: its nodes
// belong to no live generation, so nothing ever changes them in place.
func (w *Workspace) builder(root *tree.Node) *txn {
	return &txn{w: w, Txn: tree.Txn{Inos: &w.nextIno, ID: w.txnSeq.Add(1), Gen: 0, Root: root, Now: w.now()}}
}

// Overlay returns a snapshot equal to parent except at paths, where it has
// what src has there: the same file or symlink, or nothing. Directories
// left empty by a removal are removed, as git has no empty directories. It
// fails, naming the path, when one change needs another that paths lacks
// (a file in src under a name that is still a file in parent).
func (w *Workspace) Overlay(parent, src *Snapshot, paths []string) (*Snapshot, error) {
	t := w.builder(parent.root)
	if err := t.Overlay(src.root, paths); err != nil {
		return nil, err
	}
	return &Snapshot{root: t.Root}, nil
}

// SetBase makes base the state change tracking compares against, and keep
// the further snapshots the caller holds on to (they count in the held
// tally, as they stay in memory). Changes then lists what differs from
// base; checkpoints keep working.
func (w *Workspace) SetBase(base *Snapshot, keep ...*Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.setBaseLocked(base, keep)
}

func (w *Workspace) setBaseLocked(base *Snapshot, keep []*Snapshot) {
	w.bases++
	moved := pathsOf((&Snapshot{root: w.base.root}).Diff(base))
	w.cur.dirty = retrack(w.cur.dirty, moved, base.root, w.cur.root)
	for i := range w.cps {
		w.cps[i].st.dirty = retrack(w.cps[i].st.dirty, moved, base.root, w.cps[i].st.root)
	}
	// The held tally gains what the new roots hold beyond the old base;
	// what only the old roots held is not subtracted. The tally may thus
	// overcount, never undercount, and a quota check recounts exactly
	// before it refuses anything. This keeps SetBase proportional to what
	// differs instead of to the whole tree.
	held := map[*tree.Node]bool{w.base.root: true}
	for _, r := range w.retained {
		held[r] = true
	}
	oldBase := w.base.root
	for _, r := range append([]*Snapshot{base}, keep...) {
		if !held[r.root] {
			held[r.root] = true
			u := tree.CostNotIn(r.root, oldBase)
			u.Dirs-- // roots are not counted
			w.cur.usage.Held.Add(u)
		}
	}
	w.base = state{root: base.root, dirty: emptyDirty}
	w.retained = w.retained[:0]
	for _, k := range keep {
		w.retained = append(w.retained, k.root)
	}
}

func pathsOf(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}

// retrack returns the paths, among dirty and extra, at which root differs
// from base: the tracking set of root against a new base.
func retrack(dirty dirtySet, extra []string, base, root *tree.Node) dirtySet {
	out := emptyDirty
	add := func(p string) {
		if _, ok := out.Get(p); !ok {
			if _, differs := tree.DiffPath(base, root, p); differs {
				out = out.Set(p, struct{}{})
			}
		}
	}
	for it := dirty.Iterator(); !it.Done(); {
		p, _, _ := it.Next()
		add(p)
	}
	for _, p := range extra {
		add(p)
	}
	return out
}

// Restore makes the live tree exactly s: contents, modes, symlinks and
// directories. The base and the checkpoints stay; Changes then lists how s
// differs from the base. It fails with ErrQuotaExceeded, changing nothing,
// when the workspace would hold more than its quotas allow.
func (w *Workspace) Restore(s *Snapshot) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.restoreLocked(s)
}

func (w *Workspace) restoreLocked(s *Snapshot) error {
	// Both tallies exact, so "would it grow" compares like with like (the
	// held tally may overcount after SetBase).
	w.recount()
	next := tree.Tally{Live: tree.CountUnique(s.root), Held: tree.CountUnique(w.roots(s.root)...)}
	if err := w.checkQuota("restore", ".", next); err != nil {
		return err
	}
	moved := pathsOf((&Snapshot{root: w.cur.root}).Diff(s))
	w.cur.dirty = retrack(w.cur.dirty, moved, w.base.root, s.root)
	w.cur.root, w.cur.usage = s.root, next
	return nil
}

// ApplyFrom puts into the live tree what src has at paths (removing what
// src lacks), and the same into the base, as changes that came from
// elsewhere: they do not show as the worker's. It refuses, changing
// nothing, when any of those paths differs from the base in the live tree
// (the worker changed it), and names them.
func (w *Workspace) ApplyFrom(src *Snapshot, paths []string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var clash []string
	for _, p := range paths {
		if _, differs := tree.DiffPath(w.base.root, w.cur.root, p); differs {
			clash = append(clash, p)
		}
	}
	if len(clash) > 0 {
		return &Error{Op: "apply", Path: clash[0], Err: ErrDenied, Detail: fmt.Sprintf(
			"these paths changed here and elsewhere: %s", strings.Join(clash, ", "))}
	}
	base := &Snapshot{root: w.base.root}
	nextBase, err := w.Overlay(base, src, paths)
	if err != nil {
		return err
	}
	t := w.begin()
	for _, p := range paths {
		comps := strings.Split(p, "/")
		n := tree.Lookup(src.root, comps)
		if n != nil && n.Kind == tree.KindDir {
			n = nil
		}
		old := tree.Lookup(t.Root, comps)
		if old != nil && old.Kind == tree.KindDir {
			old = nil
		}
		if n == nil && old == nil {
			continue
		}
		if old != nil {
			t.Dropped(old)
		}
		if n != nil {
			t.Added(n)
		}
		if _, err := t.Put(comps, n, true); err != nil {
			return pathErr("apply", p, err)
		}
		if n == nil {
			t.PruneEmpty(comps[:len(comps)-1])
		}
	}
	if err := t.commit("apply", "."); err != nil {
		return err
	}
	// Now live and base agree on these paths: they are not the worker's
	// changes.
	keep := make([]*Snapshot, len(w.retained))
	for i, r := range w.retained {
		keep[i] = &Snapshot{root: r}
	}
	w.setBaseLocked(nextBase, keep)
	return nil
}
