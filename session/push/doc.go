// Package push owns the push transaction of a session: from a staged
// commit to a target's branch, through the reviewer's decision (the
// approval gate), the ledger's records and the target's update, to the
// sandbox's new base. A Book holds a session's pushes in flight (by
// request id, and by every commit each was asked for: a later call for
// the same commit joins it), the pinning of their commits (a discard,
// pick or pull that would rebuild a commit withdraws its request first,
// or refuses while it is landing) and the commits that reached a target
// (where they went, which a later call for one is told). It saves nothing
// itself: the session's record keeps Book.RecsLocked and PublishedLocked,
// and ResumeLocked takes the pushes up again after a restart: a request
// the ledger holds the decision of is carried out, never asked again
// (final.go; a pick is made again from the decision's record).
//
// What lands is what the request shows: every commit, the base's an empty
// target lacks included (base.go), and, after a rejection, which commits
// are new, which replace rejected ones, and which were rejected and are
// here again, matched by their own change (rejected.go); the rejection
// tells the worker to drop or amend the rejected commits.
//
// The lock: a Book's state is guarded by the session's lock
// (Session.mu, given as Config.Mu). Methods whose names end in Locked
// expect it held; Push takes it. It is never held while a call waits for
// a reviewer or while a target is pushed to (ReadFacts, Push, Landed and
// the ledger's head after a landing run without it); a target is asked
// under it only what must agree with the object store (Fetch for a
// rebase, which writes the store), and a resume's reads of the targets
// it takes up (nothing answers before the resume ends). What a push asks of its session
// (saving, warning the operator, collecting objects, the repositories) is
// the small Host and Repo interfaces, answered under that lock; the
// session imports this package, never the reverse.
//
// The path, hop by hop:
//
//  1. Book.Push reads the target's facts once (targets.ReadFacts), then
//     under the lock finds or starts the push (startLocked): a commit
//     already on the branch answers Already; a target that moved since
//     the commit's base rebases it first (askLocked); the request
//     (request) goes to the gate (SubmitRebased), and the session saves.
//  2. The call waits (await), at most Config.Timeout, then answers
//     Pending; the push goes on in its own goroutine (drive), which also
//     makes the commit of files a reviewer picked, or the commits of the
//     hunks they accepted, one per worker commit (pick, staging's Accept).
//  3. Decided (approved): the ledger records "landing" and the session
//     saves before the target is touched; a push that cannot be recorded
//     or saved ends, nothing pushed.
//  4. The target is pushed to (targets.Target.Push) and asked whether it
//     landed (targets.Landed). Landed (landed): the ledger records
//     "pushed", the sandbox advances (advanceLocked) and the ledger's head
//     is kept in the target. A target that moved under it (retried):
//     the push rebases onto the new head and asks again, up to
//     Config.Retries times; any other failure is recorded "failed".
//  5. The push ends (finishLocked): its waiters get the result, the
//     session saves that it ended.
package push
