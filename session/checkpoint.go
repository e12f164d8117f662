package session

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
)

// cpBase is what a checkpoint was taken on: the base commit, and the tip of
// the staged chain with the tree of what the workspace held of it.
type cpBase struct {
	base, baseView, tip, view plumbing.Hash
}

// Checkpoint records the workspace and what it stands on.
func (s *Session) Checkpoint(name string) (memfs.CheckpointInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info, err := s.ws.Checkpoint(name)
	if err != nil {
		return info, err
	}
	tip, view := s.area.TipView()
	base, baseView := s.area.BaseView()
	s.cps[info.Name] = cpBase{base: base, baseView: baseView, tip: tip, view: view}
	return info, nil
}

// Rolledback is what Rollback did.
type Rolledback struct {
	memfs.CheckpointInfo
	// Replayed: the base moved since the checkpoint, so its own changes
	// were replayed onto the current base instead of restoring its files
	// as they were (which would undo upstream work).
	Replayed bool
	// Conflicts lists paths both the checkpoint and upstream changed: they
	// keep the upstream version.
	Conflicts []string
}

// Rollback brings the workspace back to the named checkpoint (empty: the
// latest). When the base has not moved since, it is the checkpoint exactly.
// When it has (a pull, a push, a rebase, or more paths pulled), the checkpoint's own changes are
// replayed onto the current base, and what both changed is listed: a
// rollback never turns upstream work into the worker's reverts.
func (s *Session) Rollback(name string) (Rolledback, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp, info, err := s.ws.CheckpointSnapshot(name)
	if err != nil {
		return Rolledback{}, err
	}
	b, known := s.cps[info.Name]
	var out Rolledback
	base, baseView := s.area.BaseView()
	if !known || b.base == base && b.baseView == baseView {
		if out.CheckpointInfo, err = s.ws.Rollback(info.Name); err != nil {
			return out, err
		}
	} else {
		snap, conflicts, err := s.area.Replay(cp, b.view)
		if err != nil {
			return out, err
		}
		if out.CheckpointInfo, err = s.ws.RollbackTo(info.Name, snap); err != nil {
			return out, err
		}
		// The checkpoint keeps its own base, so rolling back to it again
		// replays it again.
		out.Replayed, out.Conflicts = true, conflicts
	}
	s.forgetDroppedCheckpointsLocked()
	s.collectLocked()
	return out, nil
}

// Checkpoints lists the checkpoints, oldest first.
func (s *Session) Checkpoints() []memfs.CheckpointInfo { return s.ws.Checkpoints() }

// forgetDroppedCheckpointsLocked lets go of the bases of checkpoints the
// workspace no longer has (a rollback drops the later ones).
func (s *Session) forgetDroppedCheckpointsLocked() {
	have := map[string]bool{}
	for _, n := range s.ws.CheckpointNames() {
		have[n] = true
	}
	for n := range s.cps {
		if !have[n] {
			delete(s.cps, n)
		}
	}
}
