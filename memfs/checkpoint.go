package memfs

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

type checkpoint struct {
	name  string
	time  time.Time
	st    state
	bases uint64 // the workspace's SetBase count when it was taken
}

// CheckpointInfo describes a checkpoint.
type CheckpointInfo struct {
	Name string
	Time time.Time
	// Changed is how many files and symlinks differ between the checkpoint
	// and the workspace now.
	Changed int
}

const maxCheckpointName = 100

// Checkpoint records the whole workspace under name (an empty name gets
// one: "checkpoint-N"). It costs O(1) time and memory: the tree is frozen,
// and later changes copy only what they touch.
func (w *Workspace) Checkpoint(name string) (CheckpointInfo, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if name == "" {
		for i := len(w.cps) + 1; ; i++ {
			name = fmt.Sprintf("checkpoint-%d", i)
			if w.findCheckpoint(name) < 0 {
				break
			}
		}
	}
	if err := checkCheckpointName(name); err != nil {
		return CheckpointInfo{}, err
	}
	if i := w.findCheckpoint(name); i >= 0 {
		return CheckpointInfo{}, fmt.Errorf("checkpoint %q already exists (taken %s); choose another name, or roll back to it",
			name, w.cps[i].time.Format(time.TimeOnly))
	}
	if len(w.cps) >= w.limits.MaxCheckpoints {
		return CheckpointInfo{}, &Error{Op: "checkpoint", Path: name, Err: ErrQuotaExceeded, Detail: fmt.Sprintf(
			"there are already %d checkpoints, the most allowed; delete one you no longer need, or roll back to an earlier one", len(w.cps))}
	}
	cp := checkpoint{name: name, time: w.now(), st: w.cur, bases: w.bases}
	w.cps = append(w.cps, cp)
	w.cpIndex[name] = len(w.cps) - 1
	w.freeze()
	return CheckpointInfo{Name: name, Time: cp.time}, nil
}

func checkCheckpointName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("checkpoint name %q %s; use a short name of letters, digits, spaces and punctuation", pathguard.Truncate(name), why)
	}
	if len(name) > maxCheckpointName {
		return bad(fmt.Sprintf("is longer than %d bytes", maxCheckpointName))
	}
	for _, r := range name {
		if r == unicode.ReplacementChar || unicode.IsControl(r) || termsafe.Invisible(r) {
			return bad("contains an invisible or control character")
		}
	}
	if strings.TrimSpace(name) != name {
		return bad("has leading or trailing spaces")
	}
	return nil
}

func (w *Workspace) findCheckpoint(name string) int {
	if i, ok := w.cpIndex[name]; ok {
		return i
	}
	return -1
}

// setCheckpoints replaces the stack and rebuilds the name index.
func (w *Workspace) setCheckpoints(cps []checkpoint) {
	w.cps = cps
	clear(w.cpIndex)
	for i, cp := range cps {
		w.cpIndex[cp.name] = i
	}
}

// Rollback restores the workspace exactly as it was at the named checkpoint
// (empty name: the most recent one): contents, modes, symlinks, directories,
// and which paths count as changed. Checkpoints taken after it are dropped;
// it stays, so one can roll back to it again.
func (w *Workspace) Rollback(name string) (CheckpointInfo, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, err := w.checkpointIndex("rollback", name)
	if err != nil {
		return CheckpointInfo{}, err
	}
	cp := w.cps[i]
	w.cur = cp.st
	if cp.bases != w.bases {
		// The base or the snapshots kept for the caller changed since the
		// checkpoint (a staged commit's, say): the tally taken with it
		// misses what they hold. Recount rather than undercount.
		defer w.recount()
	}
	// Otherwise the tally taken with the checkpoint is exact, unless
	// checkpoints were deleted since; then it overcounts, and a quota
	// check recounts before it refuses anything. Rollback stays O(1).
	w.dropAfter(i)
	return CheckpointInfo{Name: cp.name, Time: cp.time}, nil
}

func (w *Workspace) dropAfter(i int) {
	for _, later := range w.cps[i+1:] {
		delete(w.cpIndex, later.name)
	}
	w.cps = w.cps[:i+1]
}

// CheckpointSnapshot returns the workspace as it was at the named
// checkpoint (empty name: the most recent), to compare or replay.
func (w *Workspace) CheckpointSnapshot(name string) (*Snapshot, CheckpointInfo, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	i, err := w.checkpointIndex("rollback", name)
	if err != nil {
		return nil, CheckpointInfo{}, err
	}
	cp := w.cps[i]
	return &Snapshot{root: cp.st.root}, CheckpointInfo{Name: cp.name, Time: cp.time}, nil
}

// RollbackTo is Rollback to the named checkpoint with the live tree made s
// instead of the checkpoint's own tree: the checkpoint's work replayed onto
// a base that moved since. Later checkpoints are dropped, as with Rollback.
// It changes nothing when s would break the quotas.
func (w *Workspace) RollbackTo(name string, s *Snapshot) (CheckpointInfo, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, err := w.checkpointIndex("rollback", name)
	if err != nil {
		return CheckpointInfo{}, err
	}
	if err := w.restoreLocked(s); err != nil {
		return CheckpointInfo{}, err
	}
	cp := w.cps[i]
	w.dropAfter(i)
	w.recount()
	return CheckpointInfo{Name: cp.name, Time: cp.time}, nil
}

// DeleteCheckpoint drops the named checkpoint, releasing what only it kept.
func (w *Workspace) DeleteCheckpoint(name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, err := w.checkpointIndex("delete checkpoint", name)
	if err != nil {
		return err
	}
	w.setCheckpoints(append(w.cps[:i:i], w.cps[i+1:]...))
	w.recount()
	return nil
}

func (w *Workspace) checkpointIndex(op, name string) (int, error) {
	if len(w.cps) == 0 {
		return -1, fmt.Errorf("%s: %w: none has been taken; take one with Checkpoint first", op, ErrNoCheckpoint)
	}
	if name == "" {
		return len(w.cps) - 1, nil
	}
	if i := w.findCheckpoint(name); i >= 0 {
		return i, nil
	}
	names := make([]string, len(w.cps))
	for i, cp := range w.cps {
		names[i] = fmt.Sprintf("%q", cp.name)
	}
	return -1, fmt.Errorf("%s %q: %w; the checkpoints are %s", op, pathguard.Truncate(name), ErrNoCheckpoint, strings.Join(names, ", "))
}

// recount sets the held tally exactly, from everything still reachable:
// the live tree's exact tally and what the other roots hold beyond it,
// found by walking only where they differ from it (see held.go).
func (w *Workspace) recount() {
	w.cur.usage.Held = w.heldParts().total(w.cur.usage.Live)
}

// roots is every tree the workspace keeps, with live as the live one.
func (w *Workspace) roots(live *tree.Node) []*tree.Node {
	roots := append([]*tree.Node{live, w.base.root}, w.retained...)
	for _, cp := range w.cps {
		roots = append(roots, cp.st.root)
	}
	return roots
}

// Checkpoints lists the checkpoints, oldest first, with how many files and
// symlinks differ between each and the workspace now.
func (w *Workspace) Checkpoints() []CheckpointInfo {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]CheckpointInfo, len(w.cps))
	for i, cp := range w.cps {
		out[i] = CheckpointInfo{Name: cp.name, Time: cp.time, Changed: w.changedSince(cp.st)}
	}
	return out
}

// CheckpointNames lists the checkpoints' names, oldest first, without
// counting what changed since each (Checkpoints does, at a cost per
// checkpoint).
func (w *Workspace) CheckpointNames() []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]string, len(w.cps))
	for i, cp := range w.cps {
		out[i] = cp.name
	}
	return out
}

// LatestCheckpoint returns how many checkpoints there are and the latest
// one with what changed since it: what a status line needs, at the cost of
// one checkpoint.
func (w *Workspace) LatestCheckpoint() (int, CheckpointInfo) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if len(w.cps) == 0 {
		return 0, CheckpointInfo{}
	}
	cp := w.cps[len(w.cps)-1]
	return len(w.cps), CheckpointInfo{Name: cp.name, Time: cp.time, Changed: w.changedSince(cp.st)}
}

// changedSince counts the files and symlinks that differ between st and
// now, walking the two trees side by side and skipping every subtree they
// share: it costs what changed since the checkpoint, however many paths
// were touched since the base or checkpoints there are.
func (w *Workspace) changedSince(st state) int {
	return tree.CountDiff(st.root, w.cur.root)
}
