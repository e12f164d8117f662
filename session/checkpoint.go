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
	bases := make(map[string]cpBase, len(s.repos))
	for _, r := range s.repos {
		tip, view := r.area.TipView()
		base, baseView := r.area.BaseView()
		bases[r.name] = cpBase{base: base, baseView: baseView, tip: tip, view: view}
	}
	s.cps[info.Name] = bases
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
	bases := s.cps[info.Name]
	var out Rolledback
	// Each repository whose base moved since the checkpoint has its part
	// of it replayed onto that base; the others, and whatever lies
	// outside every repository, come back as they were.
	snap := cp
	for _, r := range s.repos {
		b, known := bases[r.name]
		base, baseView := r.area.BaseView()
		if !known || b.base == base && b.baseView == baseView {
			continue
		}
		part, conflicts, err := r.area.Replay(r.of(cp), b.view)
		if err != nil {
			return out, r.wrap(err)
		}
		if snap, err = r.graft(snap, part); err != nil {
			return out, r.wrap(err)
		}
		for _, c := range conflicts {
			out.Conflicts = append(out.Conflicts, r.path(c))
		}
		out.Replayed = true
	}
	if !out.Replayed {
		if out.CheckpointInfo, err = s.ws.Rollback(info.Name); err != nil {
			return out, err
		}
	} else if out.CheckpointInfo, err = s.ws.RollbackTo(info.Name, snap); err != nil {
		// The checkpoint keeps its own bases, so rolling back to it
		// again replays it again.
		return out, err
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
