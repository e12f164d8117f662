// Package natsstore keeps durable sessions in NATS JetStream (a
// store.Store), so that a session outlives the machine its server ran on
// and another server of a fleet can take it up.
//
// It owns three things under a prefix (one per fleet): a stream,
// PREFIX_journal, whose subject PREFIX.journal.ID.GEN holds session ID's
// journal (generation GEN: a rewrite writes the next one); a key-value
// bucket, PREFIX_sessions, with each session's meta (meta.ID), summary
// (sum.ID) and current journal generation (gen.ID); and a bucket,
// PREFIX_leases, whose entry ID is the session's lease: taken by Create
// (no entry may be there), renewed by Update at the revision held, and
// gone with the bucket's MaxAge when its holder stops renewing it.
//
// A batch is one message, or several (chunks of at most the server's
// max_payload, the last marked) published in order each with an
// expected last sequence for the subject: a writer whose journal another
// holder fenced (by a message published when it opened the journal)
// cannot append, and a batch is replayed whole or not at all. Records
// are in package journal's format (Batch.Segments, journal.Decode), so a
// record's check is the same as in the local store. A write that fails
// is taken back (its messages deleted while the gen entry is still its
// holder's), so the journal is as if it had never been.
//
// A message is on the server's disk when its publish is acknowledged
// (survives the server being killed); surviving a machine's loss is the
// cluster's (Replicas 3), so Journal.Sync has nothing to flush. A holder
// killed without letting go keeps its session for up to the lease's TTL.
package natsstore
