// Package scenario is one suite of what a worker does through airlock,
// written once and run through every front-end (as rclone's vfstest runs
// through every mount): in process over MCP's in-memory transport
// (gittools), and the real airlock serve over stdio and over Streamable
// HTTP (cmd/airlock), each a small Driver. The scenarios cover one and
// several repositories, durable and ephemeral sessions: a push that lands,
// the git tools of a two-repository worker, and a session across a
// restart of its server.
//
// Every scenario speaks the real MCP protocol to a real session, on real
// git repositories made in a temporary directory, and checks what the
// repositories and the ledger hold afterwards.
package scenario
