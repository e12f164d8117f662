// Package session is one worker's sandbox and the one owner of its state:
// the workspace (memfs), each repository's staging area and the one
// object store they share (staging), the targets it opened, the
// checkpoints' bases, and the book of its pushes. Every tool call that
// changes the sandbox's git side is a method here that takes Session.mu,
// so the state changes one step at a time and can be written down whole;
// the file tools write the workspace directly, which keeps itself
// consistent.
//
// What it does not own, it delegates, each to one package that asks the
// session only what its small interfaces name and never imports it:
//
//   - the worker's configuration: package worker;
//   - the push as a transaction (request, decision, landing, resume):
//     session/push, through push.Host and push.Repo;
//   - a command's run, from its arguments to the changes brought back:
//     session/runs, through runs.Session;
//   - where a durable session is kept: session/store (the Store, Lease and
//     Journal interfaces; session/store/files on disk), and how it is
//     written: session/record (the journal's records) and session/journal;
//   - a dead session's work out for a person: session/rescue.
//
// Lock order (docs/architecture.md has the whole of it): runs.Runner.mu,
// then Session.mu, then the staging area's, the workspace's and the
// store's; Session.openMu (opened targets) is never taken under
// Session.mu, and no lock of the session is held while waiting for a
// reviewer or while a target is pushed to.
package session
