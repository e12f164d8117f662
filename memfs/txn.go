package memfs

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// txn is a transaction on the workspace's tree (see tree.Txn), with the
// workspace it commits to.
type txn struct {
	tree.Txn
	w *Workspace
}

func (w *Workspace) begin() *txn {
	return &txn{w: w, Txn: tree.Txn{Inos: &w.nextIno, ID: w.txnSeq.Add(1), Gen: w.gen, Root: w.cur.root, U: w.cur.usage, Now: w.now()}}
}

// commit publishes the transaction after checking quotas.
func (t *txn) commit(op, name string) error {
	w := t.w
	if err := w.checkQuotaExact(op, name, &t.U); err != nil {
		return err
	}
	w.cur.root, w.cur.usage = t.Root, t.U
	w.heldMemo = nil // it keeps the roots it counted: not past a change
	for _, p := range t.Dirty {
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
func (w *Workspace) checkQuotaExact(op, name string, next *tree.Tally) error {
	if w.overQuota(*next) == "" {
		return nil
	}
	parts := w.heldParts()
	exact := parts.total(w.cur.usage.Live)
	next.Held.Add(exact)
	next.Held.Sub(w.cur.usage.Held)
	w.cur.usage.Held = exact
	return w.quotaError(op, name, *next, &parts)
}

// checkQuota refuses a new tally that crosses a limit. A tally that does not
// grow is always accepted, so deleting is possible even at the limit.
func (w *Workspace) checkQuota(op, name string, next tree.Tally) error {
	return w.quotaError(op, name, next, nil)
}

// overQuota names the count of next ("bytes", "files", "directories") that
// crosses its limit while growing, or is "".
func (w *Workspace) overQuota(next tree.Tally) string {
	cur, lim := w.cur.usage.Held, w.limits
	switch {
	case next.Held.Bytes > lim.MaxTotalBytes && next.Held.Bytes > cur.Bytes:
		return "bytes"
	case next.Held.Files > lim.MaxFiles && next.Held.Files > cur.Files:
		return "files"
	case next.Held.Dirs > lim.MaxDirs && next.Held.Dirs > cur.Dirs:
		return "directories"
	}
	return ""
}

// quotaError is checkQuota's refusal, if any; parts is what the roots hold
// beyond the live tree when the caller counted it already (nil: counted
// here, if needed).
func (w *Workspace) quotaError(op, name string, next tree.Tally, parts *heldSplit) error {
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
	n := pick(next.Held)
	msg := fmt.Sprintf("the workspace would hold %s, over the limit of %s", w.amount(what, n), w.amount(what, pick(lim)))
	if n > pick(next.Live) {
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
