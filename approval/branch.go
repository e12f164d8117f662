package approval

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/glob"
)

// What a branch is to its target (Request.RefRole), as the target says it.
const (
	// BranchCheckedOut: the branch is checked out in a working tree of a
	// local repository, the user's own: the push writes its files there,
	// where the user sees them. It is where the default worker is meant to
	// push, so it raises no flag.
	BranchCheckedOut = "checked-out"
	// BranchDefault: the default branch of a repository others clone (a
	// GitHub repository's default branch, a bare repository's HEAD): what
	// every clone checks out, and what others build on.
	BranchDefault = "default"
	// BranchProtected: a branch the host protects (GitHub's branch
	// protection).
	BranchProtected = "protected"
	// BranchMaybeDefault: the host's default branch could not be read,
	// so the branch may be it: flagged as the default would be, saying so.
	BranchMaybeDefault = "maybe-default"
)

// branchFlags is the branch risk of r: from what the target says the
// branch is, and from the operator's list of protected branches; never
// from the branch's name alone.
func branchFlags(r *Request, rules Rules) []Flag {
	branch := ShortRef(r.Ref)
	flag := func(format string, args ...any) []Flag {
		return []Flag{{Code: FlagProtectedRef, Severity: High, Message: fmt.Sprintf(format, args...)}}
	}
	switch r.RefRole {
	case BranchDefault:
		return flag("pushes to %s, the default branch of %s: what every clone of it checks out", branch, r.Describe)
	case BranchProtected:
		return flag("pushes to %s, a branch %s protects", branch, r.Describe)
	case BranchMaybeDefault:
		return flag("pushes to %s: the default branch of %s could not be read, so this may be the one every clone checks out", branch, r.Describe)
	}
	if p := protectedBy(rules.Protected, branch); p == branch {
		return flag("pushes to protected branch %s", branch)
	} else if p != "" {
		// Named by a pattern: the operator sees which of their entries
		// (protect:, --protect) asks for the yes, to change it if wrong.
		return flag("pushes to protected branch %s (protect: %s)", branch, p)
	}
	return nil
}

// protectedBy is the first of patterns that matches branch; "" for none.
// A pattern that does not compile matches nothing (CheckProtect refuses
// it where an operator writes it).
func protectedBy(patterns []string, branch string) string {
	for _, p := range patterns {
		if g, err := glob.Compile(p); err == nil && g.Match(strings.Split(branch, "/")) {
			return p
		}
	}
	return ""
}

// CheckProtect checks one protected-branch pattern as an operator wrote
// it (a worker file's protect list, serve --protect), with what to write
// instead when it is wrong.
func CheckProtect(pattern string) error {
	switch {
	case strings.TrimSpace(pattern) == "":
		return fmt.Errorf("an empty pattern protects nothing: name a branch (main) or a pattern (release/*)")
	case strings.HasPrefix(pattern, "refs/heads/") && len(pattern) > len("refs/heads/"):
		return fmt.Errorf("%q names a ref: name the branch itself, %q", pattern, strings.TrimPrefix(pattern, "refs/heads/"))
	case strings.HasPrefix(pattern, "refs/"):
		// refs/tags/v1 is no branch: suggesting "tags/v1" would protect a
		// branch of that name, not what the operator meant.
		return fmt.Errorf("%q is not a branch: protect names branches that pushes go to, such as main or release/*", pattern)
	case strings.HasPrefix(pattern, "/") || strings.HasSuffix(pattern, "/") || strings.Contains(pattern, "//"):
		return fmt.Errorf("%q has an empty path component: write a branch name such as release/*", pattern)
	}
	if _, err := glob.Compile(pattern); err != nil {
		return fmt.Errorf("%q is not a branch pattern (%v): use * within one component, ** across components, [abc] for one of a set", pattern, err)
	}
	return nil
}
