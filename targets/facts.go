package targets

import (
	"context"
	"errors"

	"github.com/airlock-dev/airlock/approval"
	"github.com/go-git/go-git/v5/plumbing"
)

// Facts is what one attempt at a push needs to know of its target before
// it asks a reviewer. A push reads them once per attempt (ReadFacts) and
// passes them down, so the target is asked once, not once per question.
type Facts struct {
	// Ref is the full ref pushed to: the branch asked for, else the
	// target's default branch, else main.
	Ref string
	// Head is the commit Ref holds; zero when Ref does not exist yet.
	Head plumbing.Hash
	// DefaultBranch is the target's default branch, "" when it has none
	// or it could not be read (a push there is flagged as to a protected
	// branch).
	DefaultBranch string
	// WritesFiles: a push to Ref writes files, because Ref is checked out
	// in a working tree of the target (or that could not be told: when in
	// doubt, the reviewer is shown every file).
	WritesFiles bool
	// Role is what Ref is to the target (approval.BranchCheckedOut,
	// BranchDefault, BranchProtected, BranchMaybeDefault when a host's
	// default branch could not be read, "" for another branch): where the
	// push's branch risk comes from. A branch checked out in a working
	// tree is the user's own, whatever else it is; a default branch is
	// one only where others clone from it (a bare repository, GitHub),
	// as a working tree's default is the branch it has checked out.
	Role string
}

// FactsReader is a target that reads its Facts in one call.
// On an error reading the head, the Facts it returns still name the Ref.
type FactsReader interface {
	Facts(ctx context.Context, branch string) (Facts, error)
}

// checkedOuter is a target that can tell whether a branch is checked out
// in a working tree.
type checkedOuter interface {
	CheckedOut(ctx context.Context, ref string) (bool, error)
}

// protecter is a target whose host protects some branches (GitHub's
// branch protection).
type protecter interface {
	Protected(ctx context.Context, branch string) (bool, error)
}

// ReadFacts reads t's facts for a push to branch ("" for the default
// branch): in one call when t is a FactsReader, else with a call per
// fact. Only the ref and its head are required: an error reading the head
// comes with Ref set, an invalid branch name with nothing.
func ReadFacts(ctx context.Context, t Target, branch string) (Facts, error) {
	if fr, ok := t.(FactsReader); ok {
		return fr.Facts(ctx, branch)
	}
	return readFacts(ctx, t, branch)
}

func readFacts(ctx context.Context, t Target, branch string) (Facts, error) {
	var f Facts
	_, host := t.(protecter)
	defaultUnread := false
	if db, ok := t.(DefaultBrancher); ok {
		b, err := db.DefaultBranch(ctx)
		if err == nil {
			f.DefaultBranch = b
		}
		// A host others clone from (GitHub) always has a default branch:
		// an error is one unread, and any branch may be it. A working
		// tree's default is what it has checked out; a detached HEAD has
		// none.
		defaultUnread = host && (err != nil || b == "")
	}
	if branch == "" {
		branch = f.DefaultBranch
	}
	if branch == "" {
		branch = "main"
	}
	ref, err := BranchRef(branch)
	if err != nil {
		return Facts{}, err
	}
	f.Ref = ref
	if f.Head, err = t.Head(ctx, ref); err != nil {
		return Facts{Ref: ref}, err
	}
	checkedOut := false
	if co, ok := t.(checkedOuter); ok {
		out, err := co.CheckedOut(ctx, ref)
		f.WritesFiles = out || err != nil
		checkedOut = out && err == nil
	}
	switch {
	case checkedOut:
		f.Role = approval.BranchCheckedOut
	case f.DefaultBranch != "" && ref == "refs/heads/"+f.DefaultBranch:
		f.Role = approval.BranchDefault
	case defaultUnread:
		f.Role = approval.BranchMaybeDefault
	}
	if f.Role != approval.BranchCheckedOut {
		if pr, ok := t.(protecter); ok {
			if p, err := pr.Protected(ctx, branch); err != nil || p {
				// Unreadable protection is taken as protection: the
				// reviewer is asked for yes rather than told nothing.
				f.Role = approval.BranchProtected
			}
		}
	}
	return f, nil
}

// Facts reads the repository's facts for a push to branch: one call from
// the session, however many files the repository's layout needs read.
func (l *Local) Facts(ctx context.Context, branch string) (Facts, error) {
	return readFacts(ctx, l, branch)
}

// Outcome is whether a push landed, as the branch says.
type Outcome struct {
	Landed bool
	// Worktree, when set, is the push's *WorktreeError: it landed, but
	// the working tree that has the branch checked out was left behind.
	Worktree error
}

// ErrInterrupted is what a push that a restart cut short answered: only
// the branch can say whether it landed.
var ErrInterrupted = errors.New("the push was interrupted")

// Landed decides whether the push of new to ref landed, from what Push
// answered (err) and, where that does not say, from the branch itself:
// a push that landed is never reported as failed, whatever the error.
// It is the one place that decides it: the push's driver calls it with
// Push's answer, the resume of a push cut while landing with
// ErrInterrupted.
func Landed(ctx context.Context, t Target, ref string, new plumbing.Hash, err error) Outcome {
	var wt *WorktreeError
	var le *LandedError
	var moved *MovedError
	switch {
	case err == nil:
		return Outcome{Landed: true}
	case errors.As(err, &wt) && wt.New == new:
		// Only this push's: the target may also report one that an
		// earlier, interrupted push left, met while recovering before
		// this one started.
		return Outcome{Landed: true, Worktree: err}
	case errors.As(err, &le):
		return Outcome{Landed: true}
	case errors.As(err, &moved):
		// The target read the branch as it refused: no need to ask again.
		return Outcome{Landed: moved.Head == new}
	}
	head, herr := t.Head(ctx, ref)
	return Outcome{Landed: herr == nil && head == new}
}
