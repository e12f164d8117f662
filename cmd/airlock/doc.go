// Command airlock is the sandbox's command line: the MCP server a coding
// agent talks to (serve), the reviewer's prompt (review), the ledger
// (ledger verify, ledger show), and a guided demo (demo). It stays thin:
// the tools are gittools', the sessions session's, and serve --http's
// registry of a session per client is hub's; here are the flags, the
// wiring and what the operator is told.
//
// Exit codes: 0 success; 1 failure; 2 bad usage; 3 the ledger's chain is
// broken; 4 no terminal where a person is needed.
package main
