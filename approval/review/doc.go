// Package review is the reviewer's terminal: the prompt that shows one push
// request (target, branch, commits, files, risk flags, the exact diff) and
// takes a decision, and the loop over every server's requests (Review):
// one request is shown at once; several are listed, grouped by server,
// session and repository, and the reviewer chooses which to take, in any
// order. l goes to the list from every prompt and every question under it.
//
// At a push's prompt the reviewer approves, rejects, comments (on a line
// of a file, a file, or in general: the comments go with the decision, and
// a rejection with them asks for changes), or picks part of the push: hunk
// by hunk, commit by commit, as git add -p does (hunks.go), each accepted
// hunk named by its content id (approval.HunkID) and each commit keeping
// its message unless the reviewer edits it, after a summary of what lands
// and what stays in the sandbox (summary.go); the flagged files' hunks are
// asked first. A request that follows one the reviewer saw
// (approval.Since) says so first, and d shows only what changed since
// (since.go).
//
// d opens the full-screen view (internal/diffview) on the request's
// review model (approval/review/model), where the reviewer reads, picks,
// comments with the cursor (no number typed) and decides; what they
// decide there goes through the same confirmations as at the prompt
// (view.go). The files they mark viewed are kept in the state directory
// (viewed.go), so the same change in a later request is still marked.
//
// Everything a worker or a repository wrote goes through internal/termsafe
// before it reaches the screen. The prompt refuses to run where nobody can
// answer (ErrNoTerminal), asks again before approving what carries a high
// risk, and cannot approve whole a diff too large to show.
package review
