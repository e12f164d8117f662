// Package review is the reviewer's terminal: the prompt that shows one push
// request (target, branch, commits, files, risk flags, the exact diff) and
// takes a decision, and the loop that takes requests from every server in
// turn (Review).
//
// Everything a worker or a repository wrote goes through internal/termsafe
// before it reaches the screen. The prompt refuses to run where nobody can
// answer (ErrNoTerminal), asks again before approving what carries a high
// risk, and cannot approve whole a diff too large to show.
package review
