package memfs

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/bytesize"
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
	root  *node
	u     usage
	dirty []string
	now   time.Time
}

func (w *Workspace) begin() *txn {
	return &txn{w: w, id: w.txnSeq.Add(1), gen: w.gen, root: w.cur.root, u: w.cur.usage, now: w.now()}
}

func (t *txn) owns(n *node) bool { return n.txn == t.id }

// newNode makes a node of the current generation; it is accounted when it
// is linked into the tree (see added).
func (t *txn) newNode(k kind, perm fs.FileMode, data []byte) *node {
	n := &node{kind: k, perm: perm.Perm(), mtime: t.now, ino: t.w.nextIno.Add(1), gen: t.gen, txn: t.id, data: data}
	if k == kindDir {
		n.kids = emptyKids
	}
	return n
}

// replaceData makes a new version of a file or symlink with data (which
// the caller hands over), keeping its identity and mode.
func (t *txn) replaceData(old *node, data []byte) *node {
	n := *old
	n.gen, n.txn, n.data, n.mtime, n.oid, n.lz = t.gen, t.id, data, t.now, [20]byte{}, nil
	return &n
}

// version makes a new version of a file or symlink with the same content.
// The content is copied when old is frozen: a version of the current
// generation may later be written in place, and a frozen one never may.
func (t *txn) version(old *node) *node {
	if old.lz != nil {
		// Lazy content is never changed in place: share it, id and all.
		n := *old
		n.gen, n.txn, n.mtime = t.gen, t.id, t.now
		return &n
	}
	data := old.data
	if old.gen != t.gen {
		data = bytes.Clone(data)
	}
	return t.replaceData(old, data)
}

// added accounts a subtree that is new to the workspace.
func (t *txn) added(n *node) {
	c := subtreeCost(n, 0, false)
	t.u.live.add(c)
	t.u.held.add(c)
}

// dropped accounts a subtree that leaves the live tree. Frozen versions in
// it stay held by the base or a checkpoint.
func (t *txn) dropped(n *node) {
	t.u.live.sub(subtreeCost(n, 0, false))
	t.u.held.sub(subtreeCost(n, t.gen, true))
}

// markFiles records every file and symlink at or below n, at path p, as
// possibly changed.
func (t *txn) markFiles(p string, n *node) {
	if n.kind != kindDir {
		t.dirty = append(t.dirty, p)
		return
	}
	walkFiles(n, p, func(path string, _ *node) { t.dirty = append(t.dirty, path) })
}

// put links n at comps, making missing parents when mkdirs is set, and
// returns the node it replaced. n nil removes the entry. The caller does
// the accounting of n and of what it replaced.
func (t *txn) put(comps []string, n *node, mkdirs bool) (old *node, err error) {
	root, old, err := t.putIn(t.root, comps, n, mkdirs, true)
	if err != nil {
		return nil, err
	}
	t.root = root
	return old, nil
}

func (t *txn) putIn(dir *node, comps []string, n *node, mkdirs, isRoot bool) (*node, *node, error) {
	name := comps[0]
	child := dir.child(name)
	var next, old *node
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
			child = t.newNode(kindDir, 0o755, nil)
			t.added(child)
		case child.kind != kindDir:
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
		d.kids = d.kids.Delete(name)
	} else {
		d.kids = d.kids.Set(name, next)
	}
	return d, old, nil
}

// copyDir returns a version of dir this transaction may change.
func (t *txn) copyDir(dir *node, isRoot bool) *node {
	if t.owns(dir) {
		dir.mtime = t.now
		return dir
	}
	c := *dir
	c.gen, c.txn, c.mtime = t.gen, t.id, t.now
	if !isRoot && dir.gen != t.gen {
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
	next.held.add(exact)
	next.held.sub(w.cur.usage.held)
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
