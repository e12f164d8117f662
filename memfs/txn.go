package memfs

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// txn builds the next version of the live tree. Nothing it does is visible
// until commit, and commit checks quotas before it publishes anything: an
// operation refused for any reason leaves the workspace exactly as it was.
//
// Directories are path-copied from the root; a directory version the
// transaction made itself is changed in place (it is not visible yet), so a
// transaction of many changes copies each directory once.
type txn struct {
	w     *Workspace
	id    uint64 // marks the nodes this transaction made (node.txn)
	gen   uint64 // the generation of the nodes it makes
	root  *tree.Node
	u     usage
	dirty []string
	now   time.Time
}

func (w *Workspace) begin() *txn {
	return &txn{w: w, id: w.txnSeq.Add(1), gen: w.gen, root: w.cur.root, u: w.cur.usage, now: w.now()}
}

func (t *txn) owns(n *tree.Node) bool { return n.Txn == t.id }

// newNode makes a node of the current generation; it is accounted when it
// is linked into the tree (see added).
func (t *txn) newNode(k tree.Kind, perm fs.FileMode, data []byte) *tree.Node {
	n := &tree.Node{Kind: k, Perm: perm.Perm(), Mtime: t.now, Ino: t.w.nextIno.Add(1), Gen: t.gen, Txn: t.id, Data: data}
	if k == tree.KindDir {
		n.Kids = tree.EmptyKids
	}
	return n
}

// replaceData makes a new version of a file or symlink with data (which
// the caller hands over), keeping its identity and mode.
func (t *txn) replaceData(old *tree.Node, data []byte) *tree.Node {
	n := *old
	n.Gen, n.Txn, n.Data, n.Mtime, n.OID, n.Lazy = t.gen, t.id, data, t.now, [20]byte{}, nil
	return &n
}

// version makes a new version of a file or symlink with the same content.
// The content is copied when old is frozen: a version of the current
// generation may later be written in place, and a frozen one never may.
func (t *txn) version(old *tree.Node) *tree.Node {
	if old.Lazy != nil {
		// Lazy content is never changed in place: share it, id and all.
		n := *old
		n.Gen, n.Txn, n.Mtime = t.gen, t.id, t.now
		return &n
	}
	data := old.Data
	if old.Gen != t.gen {
		data = bytes.Clone(data)
	}
	return t.replaceData(old, data)
}

// added accounts a subtree that is new to the workspace.
func (t *txn) added(n *tree.Node) {
	c := tree.SubtreeCost(n, 0, false)
	t.u.live.Add(c)
	t.u.held.Add(c)
}

// dropped accounts a subtree that leaves the live tree. Frozen versions in
// it stay held by the base or a checkpoint.
func (t *txn) dropped(n *tree.Node) {
	t.u.live.Sub(tree.SubtreeCost(n, 0, false))
	t.u.held.Sub(tree.SubtreeCost(n, t.gen, true))
}

// markFiles records every file and symlink at or below n, at path p, as
// possibly changed.
func (t *txn) markFiles(p string, n *tree.Node) {
	if n.Kind != tree.KindDir {
		t.dirty = append(t.dirty, p)
		return
	}
	tree.WalkFiles(n, p, func(path string, _ *tree.Node) { t.dirty = append(t.dirty, path) })
}

// put links n at comps, making missing parents when mkdirs is set, and
// returns the node it replaced. n nil removes the entry. The caller does
// the accounting of n and of what it replaced.
func (t *txn) put(comps []string, n *tree.Node, mkdirs bool) (old *tree.Node, err error) {
	root, old, err := t.putIn(t.root, comps, n, mkdirs, true)
	if err != nil {
		return nil, err
	}
	t.root = root
	return old, nil
}

func (t *txn) putIn(dir *tree.Node, comps []string, n *tree.Node, mkdirs, isRoot bool) (*tree.Node, *tree.Node, error) {
	name := comps[0]
	child := dir.Child(name)
	var next, old *tree.Node
	if len(comps) == 1 {
		if child == nil && n == nil {
			return nil, nil, fs.ErrNotExist
		}
		next, old = n, child
	} else {
		switch {
		case child == nil && !mkdirs:
			return nil, nil, fs.ErrNotExist
		case child == nil:
			child = t.newNode(tree.KindDir, 0o755, nil)
			t.added(child)
		case child.Kind != tree.KindDir:
			return nil, nil, syscall.ENOTDIR
		}
		var err error
		next, old, err = t.putIn(child, comps[1:], n, mkdirs, false)
		if err != nil {
			return nil, nil, err
		}
	}
	d := t.copyDir(dir, isRoot)
	if next == nil {
		d.Kids = d.Kids.Delete(name)
	} else {
		d.Kids = d.Kids.Set(name, next)
	}
	return d, old, nil
}

// copyDir returns a version of dir this transaction may change.
func (t *txn) copyDir(dir *tree.Node, isRoot bool) *tree.Node {
	if t.owns(dir) {
		dir.Mtime = t.now
		return dir
	}
	c := *dir
	c.Gen, c.Txn, c.Mtime = t.gen, t.id, t.now
	if !isRoot && dir.Gen != t.gen {
		t.u.held.Dirs++ // the old version stays with a checkpoint or the base
	}
	return &c
}

// commit publishes the transaction after checking quotas.
func (t *txn) commit(op, name string) error {
	w := t.w
	if err := w.checkQuotaExact(op, name, &t.u); err != nil {
		return err
	}
	w.cur.root, w.cur.usage = t.root, t.u
	w.heldMemo = nil // it keeps the roots it counted: not past a change
	for _, p := range t.dirty {
		if _, ok := w.cur.dirty.Get(p); !ok {
			w.cur.dirty = w.cur.dirty.Set(p, struct{}{})
		}
	}
	return nil
}

// checkQuotaExact is checkQuota, but before refusing it replaces the held
// tally, which may overcount versions nothing holds any more (after a
// checkpoint is deleted), with an exact count. That count is also what the
// refusal says keeps memory, so a refusal walks the roots once, and only
// where they differ (see held.go).
func (w *Workspace) checkQuotaExact(op, name string, next *usage) error {
	if w.overQuota(*next) == "" {
		return nil
	}
	parts := w.heldParts()
	exact := parts.total(w.cur.usage.live)
	next.held.Add(exact)
	next.held.Sub(w.cur.usage.held)
	w.cur.usage.held = exact
	return w.quotaError(op, name, *next, &parts)
}

// checkQuota refuses a new tally that crosses a limit. A tally that does not
// grow is always accepted, so deleting is possible even at the limit.
func (w *Workspace) checkQuota(op, name string, next usage) error {
	return w.quotaError(op, name, next, nil)
}

// overQuota names the count of next ("bytes", "files", "directories") that
// crosses its limit while growing, or is "".
func (w *Workspace) overQuota(next usage) string {
	cur, lim := w.cur.usage.held, w.limits
	switch {
	case next.held.Bytes > lim.MaxTotalBytes && next.held.Bytes > cur.Bytes:
		return "bytes"
	case next.held.Files > lim.MaxFiles && next.held.Files > cur.Files:
		return "files"
	case next.held.Dirs > lim.MaxDirs && next.held.Dirs > cur.Dirs:
		return "directories"
	}
	return ""
}

// quotaError is checkQuota's refusal, if any; parts is what the roots hold
// beyond the live tree when the caller counted it already (nil: counted
// here, if needed).
func (w *Workspace) quotaError(op, name string, next usage, parts *heldSplit) error {
	what := w.overQuota(next)
	if what == "" {
		return nil
	}
	pick := func(u Usage) int64 {
		switch what {
		case "files":
			return int64(u.Files)
		case "directories":
			return int64(u.Dirs)
		}
		return u.Bytes
	}
	lim := Usage{Bytes: w.limits.MaxTotalBytes, Files: w.limits.MaxFiles, Dirs: w.limits.MaxDirs}
	n := pick(next.held)
	msg := fmt.Sprintf("the workspace would hold %s, over the limit of %s", w.amount(what, n), w.amount(what, pick(lim)))
	if n > pick(next.live) {
		// Say what keeps the rest, so that the advice frees memory:
		// each part is what dropping those roots would release.
		if parts == nil {
			p := w.heldParts()
			parts = &p
		}
		byCheckpoints, byRetained := pick(parts.byCheckpoints), pick(parts.byRetained)
		var kept []string
		if byCheckpoints > 0 {
			kept = append(kept, fmt.Sprintf("%s kept only by checkpoints: deleting them or rolling back to an earlier one releases it", w.amount(what, byCheckpoints)))
		}
		if byRetained > 0 {
			kept = append(kept, fmt.Sprintf("%s kept only by %s", w.amount(what, byRetained), w.keptBy))
		}
		if len(kept) > 0 {
			msg += " (" + strings.Join(kept, "; ") + ")"
		}
	}
	return &Error{Op: op, Path: name, Err: ErrQuotaExceeded, Detail: msg + "; delete files you no longer need or write less"}
}

func (w *Workspace) amount(what string, n int64) string {
	if what == "bytes" {
		return bytesize.Format(n)
	}
	return fmt.Sprintf("%d %s", n, what)
}

// fileTooBig refuses content over the per-file limit.
func (w *Workspace) fileTooBig(op, name string, size int64) error {
	if size <= w.limits.MaxFileBytes {
		return nil
	}
	return &Error{Op: op, Path: name, Err: ErrQuotaExceeded, Detail: fmt.Sprintf(
		"the file would be %s, over the per-file limit of %s; split it into smaller files",
		bytesize.Format(size), bytesize.Format(w.limits.MaxFileBytes))}
}
