// Package ledgertest is the conformance suite of approval.Ledger: what
// the file ledger (package ledger) and a fleet's ledger in JetStream
// (package natsledger) both promise, run over each with real files and
// a real NATS server.
package ledgertest
