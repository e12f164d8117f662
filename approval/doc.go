// Package approval is the gate at the sandbox's only door: a human decides
// every push, and every request and decision is recorded.
//
//   - A Request holds everything a reviewer needs about one push, computed
//     risk flags (Assess) included. It is plain data, so it can travel to a
//     reviewer in another process.
//   - A Gate records each request in the ledger (package approval/ledger),
//     applies the Policy (ask, never, or auto-approval for targets the
//     operator named), refuses at once a change already rejected in this
//     session, and waits for a reviewer otherwise. A decision is written to
//     the ledger before the waiting push learns of it; if it cannot be
//     written, the push is refused. A decision in the ledger is final
//     (final.go): one per request id, across restarts (Resubmit of a
//     decided id gives its ticket back decided, asking nobody) and
//     across servers sharing a ledger (a second is refused, nothing
//     recorded). A reviewer's approval or rejection may be undone within
//     the policy's window, until its push starts landing (undo.go): the undo is
//     recorded as a withdrawal, the decision stays and is never carried
//     out, and the push is asked again under a new id.
//   - An approval yields a Grant: the capability a target requires to
//     push, naming exactly target, ref, old commit and new commit. Its zero
//     value grants nothing and no other package can set its fields.
//   - The gate writes every ledger record of a push: its request, the
//     decision, a withdrawal, and how it went (RecordPush with a
//     PushRecord: landing, pushed, failed, or an outcome a resumed session
//     found).
//   - Assess reads a push's files as data (Contents over a read-only
//     BlobReader), never through the caller's code, and every message of
//     a commit that lands (CheckMessage: hidden characters, trailers that
//     claim a review or sign-off, lines that run code), the base's commits
//     an empty target lacks (Request.BaseCommits) included.
//
// The other concerns of the door live in packages of their own:
// approval/ledger (the tamper-evident record), approval/broker (requests
// and decisions between servers and reviewers over private Unix sockets)
// and approval/review (the reviewer's terminal).
package approval
