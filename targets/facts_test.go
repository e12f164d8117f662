package targets_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/targets"
)

// headTarget is a target whose branch is at head (or whose head cannot be
// read: err), and that counts the reads.
type headTarget struct {
	targets.Target
	head  plumbing.Hash
	err   error
	reads int
}

func (h *headTarget) Head(context.Context, string) (plumbing.Hash, error) {
	h.reads++
	return h.head, h.err
}

// Landed is the one judge of whether a push landed: what Push answered
// where it says (no read of the branch), the branch otherwise, so a push
// that landed is never reported failed and a WorktreeError left by an
// earlier push is not taken for this one's.
func TestLanded(t *testing.T) {
	ref := "refs/heads/main"
	old, nu, other := plumbing.NewHash("01"), plumbing.NewHash("02"), plumbing.NewHash("03")
	wt := &targets.WorktreeError{Ref: ref, Worktree: "/w", Old: old, New: nu, Err: errors.New("disk full")}
	earlier := &targets.WorktreeError{Ref: ref, Worktree: "/w", Old: other, New: old, Err: errors.New("disk full")}
	for _, c := range []struct {
		name      string
		err       error
		head      plumbing.Hash
		headErr   error
		landed    bool
		worktree  bool
		headReads int
	}{
		{"no error", nil, old, nil, true, false, 0},
		{"its worktree left behind", fmt.Errorf("push: %w", wt), old, nil, true, true, 0},
		{"an earlier push's worktree, branch not moved", earlier, old, nil, false, false, 1},
		{"an earlier push's worktree, branch moved", earlier, nu, nil, true, false, 1},
		{"landed, then an error", &targets.LandedError{Ref: ref, Err: errors.New("hook")}, old, nil, true, false, 0},
		{"moved elsewhere", &targets.MovedError{Ref: ref, Expected: old, Head: other}, nu, nil, false, false, 0},
		{"moved to the commit", &targets.MovedError{Ref: ref, Expected: old, Head: nu}, old, nil, true, false, 0},
		{"other error, branch at the commit", errors.New("connection reset"), nu, nil, true, false, 1},
		{"other error, branch not moved", errors.New("connection reset"), old, nil, false, false, 1},
		{"other error, head unreadable", errors.New("connection reset"), nu, errors.New("gone"), false, false, 1},
		{"interrupted, landed", targets.ErrInterrupted, nu, nil, true, false, 1},
		{"interrupted, not landed", targets.ErrInterrupted, old, nil, false, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &headTarget{head: c.head, err: c.headErr}
			got := targets.Landed(context.Background(), h, ref, nu, c.err)
			if got.Landed != c.landed || (got.Worktree != nil) != c.worktree || h.reads != c.headReads {
				t.Errorf("Landed = %+v after %d head reads; want landed %v, worktree %v, %d reads", got, h.reads, c.landed, c.worktree, c.headReads)
			}
		})
	}
}
