// Package approval is the gate at the sandbox's only door: a human decides
// every push, and every request and decision is recorded.
//
//   - A Request holds everything a reviewer needs about one push, computed
//     risk flags (Assess) included. It is plain data, so it can travel to a
//     reviewer in another process.
//   - A Gate records each request in the Ledger, applies the Policy (ask,
//     never, or auto-approval for targets the operator named), refuses at
//     once a change already rejected in this session, and waits for a
//     reviewer otherwise. A decision is written to the ledger before the
//     waiting push learns of it; if it cannot be written, the push is
//     refused.
//   - An approval yields a Grant: the capability a target requires to
//     push, naming exactly target, ref, old commit and new commit. Its zero
//     value grants nothing and no other package can set its fields.
//   - Prompt is the reviewer's terminal UI, through the Terminal
//     interface; it refuses to run where nobody can answer.
//   - Listen (a server's Broker) and Watch (a reviewer's connection to
//     every server) carry requests and decisions over private Unix sockets,
//     because an MCP server cannot prompt on its own stdin.
//   - The Ledger is append-only JSON Lines, hash-chained and fsynced per
//     record; Verify finds edited, removed, reordered and torn records.
package approval
