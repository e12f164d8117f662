package staging

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging/commitmeta"
	"github.com/airlock-dev/airlock/staging/untracked"
)

// ErrNothingToAmend: Amend was asked with nothing staged.
var ErrNothingToAmend = errors.New("nothing is staged to amend")

// Amend replaces the latest staged commit in place, as git commit --amend
// does: the new commit holds the latest's changes and the unstaged changes
// at or under paths (none: every unstaged change; there may be none, to
// change the message alone), with message (empty: the latest's own), on
// the same parent. It records the commit it replaces (Commit.Replaces),
// so that a re-review can say which commit a rejected one became. Nothing
// in the workspace changes. With nothing staged, or when the result would
// change nothing against its parent, it refuses and changes nothing.
func (a *Area) Amend(paths []string, message string) (StageReport, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.chain)
	if n == 0 {
		return StageReport{}, fmt.Errorf("%w: git_stage without amend makes the first commit", ErrNothingToAmend)
	}
	old := a.chain[n-1]
	msg := old.c.Message
	if strings.TrimSpace(message) != "" {
		var err error
		if msg, err = commitmeta.CleanMessage(message); err != nil {
			return StageReport{}, err
		}
	}
	if err := a.inSync(old); err != nil {
		return StageReport{}, err
	}
	parent := a.base
	if n > 1 {
		parent = a.chain[n-2]
	}
	live, all := a.ws.SnapshotChanges()
	shown, ignored, c := a.ign.Split(live, old.snap, all, nil)
	selected, forced, leftOut, err := untracked.Select(c, shown, ignored, paths)
	if errors.Is(err, ErrNothingToStage) && len(paths) == 0 {
		// Nothing unstaged: the message alone changes.
		selected, err = nil, nil
	}
	if err != nil {
		return StageReport{}, err
	}
	next := old.snap
	switch {
	case len(selected) == 0:
	case len(selected) == len(all):
		next = live
	default:
		if next, err = a.ws.Overlay(old.snap, live, selected); err != nil {
			return StageReport{}, fmt.Errorf("amend: %w: %v", ErrConflict, err)
		}
	}
	edits, err := a.amendEdits(old, live, selected)
	if err != nil {
		return StageReport{}, err
	}
	now := a.now()
	l, err := a.commitEdits(parent, edits, msg, old.c.Author.When, now)
	if errors.Is(err, ErrNothingToStage) {
		return StageReport{}, fmt.Errorf("amend: %w: the amended commit would change nothing; git_discard commit_id=%s drops it instead", ErrNothingToStage, shortid.Hash(old.id))
	}
	if err != nil {
		return StageReport{}, err
	}
	l.snap = next
	l.paths = old.paths
	for _, p := range selected {
		if !slices.Contains(l.paths, p) {
			l.paths = append(slices.Clip(l.paths), p)
		}
	}
	l.c.Replaces = append([]plumbing.Hash{old.id}, old.c.Replaces...)
	a.chain[n-1] = l
	a.ws.SetBase(next, a.keep()...)
	return StageReport{Commit: l.c, Forced: forced, LeftOut: leftOut}, nil
}

// amendEdits are the edits that make old's change and the selected live
// changes on old's parent: old's paths as old has them, then the selected
// ones as the workspace has them (a path in both takes the workspace's).
func (a *Area) amendEdits(old link, live *memfs.Snapshot, selected []string) ([]edit, error) {
	sel := map[string]bool{}
	for _, p := range selected {
		sel[p] = true
	}
	var kept []string
	for _, p := range old.paths {
		if !sel[p] {
			kept = append(kept, p)
		}
	}
	edits, err := a.editsFor(old.snap, kept)
	if err != nil {
		return nil, err
	}
	more, err := a.editsFor(live, selected)
	if err != nil {
		return nil, err
	}
	return append(edits, more...), nil
}
