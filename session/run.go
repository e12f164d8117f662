package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session/runs"
)

// Running commands is package runs's; these are its names as the session's
// callers (the tools, airlock serve) have always used them.
type (
	// RunMode is what a run may do (runs.Mode).
	RunMode = runs.Mode
	// RunOptions are the operator's settings for the run tool (runs.Options).
	RunOptions = runs.Options
	// RunArgs is one command to run (runs.Args).
	RunArgs = runs.Args
	// RunResult is how a run went (runs.Result).
	RunResult = runs.Result
)

// The run modes (runs.Mode).
const (
	RunWorkspaceWrite = runs.WorkspaceWrite
	RunReadOnly       = runs.ReadOnly
	RunDanger         = runs.Danger
)

// DefaultRunTimeout is a run's timeout unless the worker or the operator
// says less.
const DefaultRunTimeout = runs.DefaultTimeout

// ErrNetworkPending: the reviewer has not answered a run's request for the
// network yet; calling run again with the same command waits on it.
var ErrNetworkPending = runs.ErrNetworkPending

// newRunner is the session's runner for opts (nil: no run tool).
func newRunner(s *Session, opts *RunOptions) *runs.Runner {
	if opts == nil {
		return nil
	}
	return runs.New(runs.Config{Options: *opts, Workspace: s.ws, Session: runHost{s}, Gate: s.gate,
		Worker: s.w.Name, SessionID: s.id, Wait: s.opts.Timeout})
}

// runHost is what the runner asks of the session.
type runHost struct{ *Session }

func (h runHost) DropIgnored(lists ...*[]string) int { return h.dropIgnored(lists...) }
func (h runHost) Warn(format string, args ...any)    { h.warn(format, args...) }
func (h runHost) RunsDir() string                    { return h.runsDir() }

// runsDir is where a durable session's run outputs live; "" in memory.
func (s *Session) runsDir() string {
	dir := s.localStateDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "runs")
}

// ReadOnly reports whether the operator made the workspace read-only
// (airlock serve --run read-only): runs' writes are discarded and the file
// tools may not write either.
func (s *Session) ReadOnly() bool { return s.run != nil && s.run.Mode() == RunReadOnly }

// Networked reports whether every run has the network, the internet (airlock
// serve --danger); otherwise a run has it only when a reviewer allows it.
func (s *Session) Networked() bool { return s.run != nil && s.run.Mode() == RunDanger }

// MayRun reports whether the session offers the run tool: the operator
// enabled commands, and the sandbox has not been found impossible to
// build here (it may still be being probed: CanRun, and Run, wait for
// the answer).
func (s *Session) MayRun() bool {
	if s.opts.Run == nil {
		return false
	}
	err, done := sandbox.Probed()
	return !done || err == nil
}

// CanRun reports whether the session has the run tool, and why not,
// waiting for the sandbox's probe if it has not answered yet.
func (s *Session) CanRun() error {
	if s.opts.Run == nil {
		return errors.New("the operator did not enable commands")
	}
	return sandbox.Available()
}

// Run runs a command in the sandbox on the workspace, after a checkpoint,
// and brings what it changed into the workspace through the path guard,
// the deny list and the quotas (runs.Runner.Run).
func (s *Session) Run(ctx context.Context, a RunArgs, progress Progress) (RunResult, error) {
	if err := s.CanRun(); err != nil {
		return RunResult{}, fmt.Errorf("run is not available: %w", err)
	}
	return s.run.Run(ctx, a, runs.Progress(progress))
}

// RunOutput returns the whole output (as much as was kept) of a run.
func (s *Session) RunOutput(id, stream string) (string, error) {
	if s.run == nil {
		return "", errors.New("run is not available in this session")
	}
	return s.run.Output(id, stream)
}
