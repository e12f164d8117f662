// Package mcptest is what tests need to be an MCP client of airlock over
// Streamable HTTP, with the real SDK client: a connection carrying a bearer
// token that remembers the session headers the server answers with, a
// tool call's text, and a raw JSON-RPC post for what the SDK's client
// would never send. It is imported by tests only (hub's, cmd/airlock's).
package mcptest
