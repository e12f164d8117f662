// Package review is the reviewer's terminal: the prompt that shows one push
// request (target, branch, commits, files, risk flags, the exact diff) and
// takes a decision, and the loop over every server's requests (Review):
// one request is shown at once; several are listed, grouped by server,
// session and repository, and the reviewer chooses which to take, in any
// order.
//
// Everything a worker or a repository wrote goes through internal/termsafe
// before it reaches the screen. The prompt refuses to run where nobody can
// answer (ErrNoTerminal), asks again before approving what carries a high
// risk, and cannot approve whole a diff too large to show.
package review
