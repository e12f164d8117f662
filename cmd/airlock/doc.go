// Command airlock is the sandbox's command line: the MCP server a coding
// agent talks to (serve), the reviewer's prompt (review), the ledger
// (ledger verify, ledger show), and a guided demo (demo).
//
// Exit codes: 0 success; 1 failure; 2 bad usage; 3 the ledger's chain is
// broken; 4 no terminal where a person is needed.
package main
