// Package runs runs a worker's commands for a session: it checks a run's
// arguments, serialises runs, gets the reviewer's leave for the network,
// takes the checkpoint that undoes a run, brings the session's mirror of
// the workspace up to date, runs the command in the sandbox while a watch
// holds it to the workspace's quota, brings what it changed back into the
// workspace, and keeps its output (on disk for a durable session).
//
// It owns the run's path from the tool's call to its answer, and the
// state that goes with it (the mirror, the outputs, the network
// approvals, the worker's file times, the session's own cache). It does
// not own the jail (package sandbox) nor the crossing between the
// workspace and the run's directories (package sandbox/mirror), nor the
// worker's cache on disk (package session/runcache): it drives them. What
// it needs of the session is small and named where it is used: Session
// (checkpoints, git's ignore rules, warnings, where outputs go),
// Workspace (memfs.Workspace) and Gate (approval.Gate).
package runs
