// Package natsledger keeps a fleet's ledger in NATS JetStream: one
// hash-chained ledger that every airlock server of the fleet appends to
// (an approval.Ledger), in place of each machine's file.
//
// The records are package ledger's, made by ledger.Next and checked by
// ledger.CheckChain: the same chain, the same hashes, the same checks as
// the file. Each record is one message of the stream PREFIX_ledger, on
// the subject PREFIX.ledger, its data the record's JSON (a line of the
// file without its newline), at the stream sequence of its own number
// (Record reads it there). A record is bounded by the servers'
// max_payload (1 MiB by default): a larger one is refused at once,
// saying so.
//
// Append publishes with the stream's expected last sequence: a record
// lands only right after the head it was made from, so servers appending
// at once never fork the chain; the one that finds another server's
// record there makes its record again from the new head and tries again
// (bounded: appendWait). A record whose publish had no answer (a node
// died, the connection dropped) is published again unchanged, with the
// same Nats-Msg-Id (its hash), as long as the head has not moved; once it
// has, the message right after the record's head says whether it landed.
// So a retried publish neither adds a record twice nor forks.
//
// An Append that returns has its record acknowledged by the stream:
// written by a quorum of its replicas (Options.Replicas; a fleet runs
// 3), so it survives a NATS server killed, and a machine lost while the
// others stand (NATS flushes to the disk itself every sync_interval,
// not at each message, unless sync_always: unlike the file's fsync per
// record, a power cut of every replica at once can lose the last
// records; the head targets keep then says so at verify). One
// that fails (no answer for appendWait) may still have its record there,
// as a file's append whose fsync failed may: the gate acts on neither.
//
// The stream denies deleting and purging messages (DenyDelete, DenyPurge,
// which no later update can lift), so no client of the JetStream API
// removes a record. What an operator does anyway (the stream's files
// edited, the stream deleted and made again, a message published to the
// subject by something else) Verify finds: a message that is not a
// record, a gap in the stream's sequence, a record not at its own number,
// and every break of the chain. A stream deleted whole and started again
// looks like a new ledger; the head a push's target keeps (its first
// record's hash) is what catches that. Keep anything but airlock's
// servers from publishing to PREFIX.ledger and from the stream's delete
// API with NATS permissions.
package natsledger
