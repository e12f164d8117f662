package gittools

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/session"
)

// hints are a tool's MCP annotations, which clients use to decide what to
// allow without asking (a read-only tool, say). Each must be true of the
// tool: a client that trusts a wrong "read-only" or "not destructive"
// lets the agent do what its user meant to be asked about.
type hints struct {
	title       string
	readOnly    bool // changes nothing at all
	destructive bool // may replace or remove what is there (not only add)
	idempotent  bool // the same call again has no further effect
	openWorld   bool // reaches outside the sandbox
	// readOnlyMode says whether a read-only session (airlock serve --run
	// read-only) offers a tool that is not readOnly: every such tool must
	// say (TestReadOnlyModeIsDeclared), so that a new tool that changes
	// the sandbox cannot reach read-only mode without someone deciding.
	readOnlyMode mode
}

// mode is whether read-only mode offers a tool.
type mode int

const (
	undeclared mode = iota // a reader (offered), or a mistake
	// offered: it changes the sandbox, but not by writing the
	// workspace's files with the worker's content (staging, pushing,
	// pulling a target's files in, checkpoints; run discards its own
	// writes in this mode).
	offered
	// withheld: it writes the worker's content into the workspace (the
	// file tools that write): listed, and refused with the reason if
	// called.
	withheld
)

// offeredReadOnly reports whether read-only mode offers the tool named.
func offeredReadOnly(name string) bool {
	h := toolHints[name]
	return h.readOnly || h.readOnlyMode == offered
}

// toolHints holds every tool's annotations (TestEveryToolIsAnnotated
// holds every tool to having an entry).
//
//   - The readers change nothing.
//   - write_file, edit_file, move_file and delete_file may replace or remove
//     a file of the workspace (move_file replaces its destination, as
//     rename does); writing the same content, or deleting the same path,
//     twice has no further effect.
//   - git_stage only adds a commit; git_discard drops one and rollback
//     drops the later checkpoints and the changes since: destructive, in
//     the sandbox.
//   - git_push leaves the sandbox (open world): it adds commits to a
//     target's branch, never forces, and a second call for the same
//     commit joins the first (idempotent); nothing in the sandbox is lost.
//   - git_pull reads from targets outside the sandbox (open world) and
//     replaces workspace files with theirs (an update of the base, or a
//     copy into a destination); pulling again finds nothing new.
//   - run may change or delete any workspace file (not in read-only mode,
//     where its writes are thrown away). It is open world only when every
//     run has the network (--danger); otherwise a run gets the
//     network only when a reviewer allows that run, so a client that
//     auto-allows run still cannot reach the network unasked.
var toolHints = map[string]hints{
	"read_file":        {title: "Read a file", readOnly: true, idempotent: true},
	"list_files":       {title: "List files", readOnly: true, idempotent: true},
	"search_files":     {title: "Search files", readOnly: true, idempotent: true},
	"write_file":       {title: "Write a file", destructive: true, idempotent: true, readOnlyMode: withheld},
	"edit_file":        {title: "Edit a file", destructive: true, readOnlyMode: withheld},
	"delete_file":      {title: "Delete a file", destructive: true, idempotent: true, readOnlyMode: withheld},
	"move_file":        {title: "Move a file", destructive: true, readOnlyMode: withheld},
	"git_status":       {title: "Show status", readOnly: true, idempotent: true},
	"git_stage":        {title: "Stage a commit", readOnlyMode: offered},
	"git_diff":         {title: "Show a diff", readOnly: true, idempotent: true},
	"git_push":         {title: "Push for review", idempotent: true, openWorld: true, readOnlyMode: offered},
	"git_discard":      {title: "Drop a staged commit", destructive: true, idempotent: true, readOnlyMode: offered},
	"git_pull":         {title: "Pull files in", destructive: true, idempotent: true, openWorld: true, readOnlyMode: offered},
	"checkpoint":       {title: "Take a checkpoint", readOnlyMode: offered},
	"rollback":         {title: "Roll back", destructive: true, idempotent: true, readOnlyMode: offered},
	"list_checkpoints": {title: "List checkpoints", readOnly: true, idempotent: true},
	"run":              {title: "Run a command", destructive: true, readOnlyMode: offered},
	"run_output":       {title: "Show a run's output", readOnly: true, idempotent: true},
}

// annotations are the MCP annotations of tool name in s, every hint given
// (the protocol's defaults for a missing one are the cautious ones, but a
// client should not have to know them).
func annotations(s *session.Session, name string) *mcp.ToolAnnotations {
	h := toolHints[name]
	if name == "run" {
		h.openWorld = s.Networked()
		h.destructive = !s.ReadOnly()
	}
	return &mcp.ToolAnnotations{Title: h.title, ReadOnlyHint: h.readOnly, DestructiveHint: &h.destructive,
		IdempotentHint: h.idempotent, OpenWorldHint: &h.openWorld}
}
