// Package gittools is the worker's surface, and only that: the file tools,
// the git tools, the checkpoint tools and the command tools, each described
// once (name, JSON schema, a description written for an LLM reader),
// decoded strictly and answered in words, served over MCP (NewMCPServer) or
// called in process (Call, on a *session.Session).
//
// Over MCP each tool carries annotations that are true of it
// (annotations.go: read-only, destructive, idempotent, open-world), and
// the server's instructions say what the workspace holds (contents.go).
// The annotations also carry each tool's capability in read-only mode
// (airlock serve --run read-only): every tool that changes the sandbox
// declares whether that mode allows it, and Call refuses the others with
// the reason (ToolsFor still lists them, so that a worker calling one
// learns why it cannot rather than meeting an unknown tool;
// TestReadOnlyModeIsDeclared).
//
// What the tools act on belongs elsewhere: the sandbox's state and its
// locks to session (a Session, configured by a worker.Worker), the search
// engine behind search_files to search, the reviewer's prompt to
// approval/review; the demo is cmd/airlock's.
//
// Every error a tool returns is meant for the worker to act on: which path
// rule was broken, which quota was hit, which files conflict, why the
// reviewer said no. Host paths outside what the worker named never appear
// in them; names and messages are escaped (names.go) before they reach the
// worker.
package gittools
