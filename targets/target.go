package targets

import (
	"unicode/utf8"

	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/targets/internal/transfer"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/staging"
)

// Target is a place commits go to and files come from.
//
// Every method is safe for concurrent use. Push MUST refuse unless its
// Grant names this target (ID), the ref, the commit the ref holds when the
// push happens, and the commit to push; it MUST move the ref only from
// exactly grant.Old to exactly grant.New, and never force. A push either
// lands whole or changes nothing.
type Target interface {
	// ID identifies the target: "local:/abs/path", "local-bare:/abs/path",
	// "github:owner/repo". A Grant names it.
	ID() string
	// Describe says where the target is, for people.
	Describe() string
	// Head returns the commit ref points at, or the zero hash when the ref
	// does not exist.
	Head(ctx context.Context, ref string) (plumbing.Hash, error)
	// Fetch copies the commit at ref into store, with every tree of it and
	// the blobs at or under paths (all blobs when paths is empty), and
	// returns the commit. Staging builds new trees from those trees.
	Fetch(ctx context.Context, ref string, paths []string, store *staging.Store) (plumbing.Hash, error)
	// Push sends grant.New with the commits and objects it needs (read
	// from store) and moves grant.Ref from grant.Old to grant.New.
	Push(ctx context.Context, g approval.Grant, store *staging.Store) error
}

// DefaultBrancher is a target that knows its default branch.
type DefaultBrancher interface {
	DefaultBranch(ctx context.Context) (string, error)
}

// PullRequester is a target that can open a pull request.
type PullRequester interface {
	// OpenPullRequest asks to merge head into base, and returns its URL.
	OpenPullRequest(ctx context.Context, head, base, title, body string) (string, error)
}

// Errors callers branch on.
var (
	// ErrTargetMoved: the ref is not at the commit the push expected.
	ErrTargetMoved = errors.New("target moved")
	// ErrRefNotFound: the ref to fetch does not exist.
	ErrRefNotFound = errors.New("ref not found")
	// ErrInvalidRef: a branch or ref name is not one git accepts.
	ErrInvalidRef = errors.New("invalid ref name")
	// ErrDirtyWorktree: the target's working tree has uncommitted changes
	// in paths the push would change.
	ErrDirtyWorktree = errors.New("uncommitted changes in the target's working tree")
	// ErrObjectTooLarge: an object of the target's is larger than the
	// sandbox can hold; it was refused by its declared size, unread.
	ErrObjectTooLarge = transfer.ErrTooLarge
	// ErrSymbolicBranch: the branch pushed to is a symbolic ref in the
	// target, which git would write through to the branch it names.
	ErrSymbolicBranch = errors.New("the branch is a symbolic ref in the target")
)

// MovedError says where the target's ref is now.
type MovedError struct {
	Ref            string
	Expected, Head plumbing.Hash
}

// LandedError: the branch moved to the pushed commit, but the target
// reported an error after that (a hook, a failed clean-up). The push
// landed; Err says what went wrong after.
type LandedError struct {
	Ref string
	Err error
}

func (e *LandedError) Error() string {
	return fmt.Sprintf("the push landed (%s moved) but the target then reported: %v", e.Ref, e.Err)
}

func (e *LandedError) Unwrap() error { return e.Err }

func (e *MovedError) Error() string {
	return fmt.Sprintf("%v: %s is at %s now, not %s as approved; pull again, or push again to rebase onto it (a new review)",
		ErrTargetMoved, e.Ref, shortid.HashOr(e.Head, "(no commit: the ref does not exist)"), shortid.HashOr(e.Expected, "(no commit: the ref does not exist)"))
}

func (e *MovedError) Unwrap() error { return ErrTargetMoved }

// DirtyError lists the paths in the way.
type DirtyError struct {
	Paths []string
}

func (e *DirtyError) Error() string {
	list := e.Paths
	more := ""
	if len(list) > 20 {
		list, more = list[:20], fmt.Sprintf(" and %d more", len(e.Paths)-20)
	}
	return fmt.Sprintf("%v: %s%s; commit or stash them in the target repository, or push to another branch", ErrDirtyWorktree, strings.Join(list, ", "), more)
}

func (e *DirtyError) Unwrap() error { return ErrDirtyWorktree }

// ErrWorktreeNotUpdated: the push landed (the branch moved) but the
// working tree that has the branch checked out could not be brought to it.
var ErrWorktreeNotUpdated = errors.New("pushed, but the working tree was not updated")

// WorktreeError is a push that landed with its working tree left behind. It
// is not a failed push: the branch holds the new commit. Recovery finishes
// the update at the next push or start; the message says how to finish it
// by hand. When Err is a *KeptError, the update is finished but for files
// the user edited while the push landed, which stay theirs.
type WorktreeError struct {
	Ref, Worktree string
	Old, New      plumbing.Hash
	Err           error
}

func (e *WorktreeError) Error() string {
	var kept *KeptError
	if errors.As(e.Err, &kept) {
		// Finished but for the user's edits: nothing is left for recovery
		// or read-tree to do, and read-tree would refuse over the edits.
		return fmt.Sprintf("%v: %v", ErrWorktreeNotUpdated, kept)
	}
	return fmt.Sprintf("%v: %s is at %s, but updating the files in %s failed: %v; airlock finishes the update at its next push or start once the cause is gone, or run `git -C %s read-tree -m -u %s %s` to do it yourself",
		ErrWorktreeNotUpdated, BranchName(e.Ref), shortid.HashOr(e.New, "(no commit: the ref does not exist)"), e.Worktree, e.Err, e.Worktree, oldTreeish(e.Old), e.New)
}

func (e *WorktreeError) Unwrap() []error { return []error{ErrWorktreeNotUpdated, e.Err} }

func oldTreeish(h plumbing.Hash) string {
	if h.IsZero() {
		return staging.EmptyTree.String()
	}
	return h.String()
}

// BranchRef validates a branch name (or a full refs/heads/ name) as git
// check-ref-format does, and returns the full ref.
func BranchRef(name string) (string, error) {
	full := name
	if !strings.HasPrefix(name, "refs/") {
		full = "refs/heads/" + name
	}
	if !strings.HasPrefix(full, "refs/heads/") {
		return "", fmt.Errorf("%w %q: only branches (refs/heads/...) can be pushed to", ErrInvalidRef, name)
	}
	if err := checkRefFormat(full); err != nil {
		return "", fmt.Errorf("%w %q: %s; use a name such as \"feature/report\"", ErrInvalidRef, name, err)
	}
	return full, nil
}

// checkRefFormat applies git check-ref-format's rules.
func checkRefFormat(ref string) error {
	if len(ref) > 1024 {
		return errors.New("too long")
	}
	if ref == "@" || strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".") {
		return errors.New("it may not end with \"/\" or \".\"")
	}
	switch strings.TrimPrefix(ref, "refs/heads/") {
	case "HEAD", "@":
		// git refuses to make them (git branch HEAD), and every tool
		// would read them as the current commit, not a branch.
		return errors.New("HEAD and @ name the current commit, not a branch")
	}
	if strings.Contains(ref, "..") || strings.Contains(ref, "@{") || strings.Contains(ref, "//") {
		return errors.New(`it may not contain "..", "@{" or "//"`)
	}
	for _, r := range ref {
		if r < 0x20 || r == 0x7f || unicode.IsControl(r) || strings.ContainsRune(" ~^:?*[\\", r) {
			return fmt.Errorf("it may not contain %q", r)
		}
		if termsafe.Invisible(r) || r == utf8.RuneError {
			// A bidi override or an invisible character makes a branch
			// read as another one in review.
			return fmt.Errorf("it may not contain U+%04X, an invisible or text-direction character", r)
		}
	}
	for _, c := range strings.Split(ref, "/") {
		if c == "" || strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return fmt.Errorf("component %q may not be empty, start with \".\" or end with \".lock\"", c)
		}
	}
	if strings.HasPrefix(strings.TrimPrefix(ref, "refs/heads/"), "-") {
		return errors.New(`it may not start with "-"`)
	}
	return nil
}

// BranchName is a ref's branch name: "refs/heads/main" is "main".
func BranchName(ref string) string { return strings.TrimPrefix(ref, "refs/heads/") }

// Admit judges a grant against the commit the target's ref holds now:
// done when the ref already holds the pushed commit (pushing the same thing
// twice is a no-op), a MovedError when it holds anything but the grant's
// old commit, and the grant's own check otherwise. Every target's Push
// (Local's here, GitHub's in targets/github) starts with it.
func Admit(id, ref string, g approval.Grant, cur plumbing.Hash) (done bool, err error) {
	if cur == g.New() && g.Old() != g.New() {
		return true, nil
	}
	if cur != g.Old() {
		return false, &MovedError{Ref: ref, Expected: g.Old(), Head: cur}
	}
	return false, g.Check(id, ref, cur, g.New())
}
