// Package gittools is the worker's surface: the file tools, the git tools
// and the checkpoint tools, described once (name, JSON schema, a
// description written for an LLM reader) and served over MCP
// (NewMCPServer) or called in process (Session.Call). Over MCP each tool
// carries annotations that are true of it (annotations.go: read-only,
// destructive, idempotent, open-world), and the server's instructions say
// what the workspace holds (contents.go).
//
// A Session is one worker's sandbox: a memfs workspace, a staging area,
// the worker's targets, and the approval gate every push goes through.
// Workers are configured by a Markdown file whose YAML frontmatter
// (ParseWorker) names the worker, its author, its targets, what to pull at
// start and the sandbox's limits; its body is the worker's instructions,
// served as an MCP prompt.
//
// Every error a tool returns is meant for the worker to act on: which path
// rule was broken, which quota was hit, which files conflict, why the
// reviewer said no. Host paths outside what the worker named never appear
// in them.
package gittools
