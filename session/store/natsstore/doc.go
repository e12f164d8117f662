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
//
// A session checks after each save that its state is still the one it
// holds (Lease.Here, Journal.Here). Here asks the server nothing, so a
// save is one round trip (its publish): the lease counts itself held
// while its last renewal was sent less than a TTL ago (the server dates
// the entry later, so the server never expires a lease its holder still
// counts as held), and one watch per Store on the sessions' meta and
// gen entries and on the leases tells it, within milliseconds, that
// another wrote or removed them. This is safe because Here is not what
// stops a holder that lost its session from writing: every publish
// expects the subject's last sequence to be the one this holder wrote,
// and whoever opens the journal after it publishes a fence first, so a
// stale holder's write is refused (ErrFenced) however late its Here
// learns of it. Here only decides when the state must be written again
// (after an operator removed it); learning that a little late only
// widens the window that exists anyway between a check and a removal,
// and the session's sync loop checks again every second.
//
// A lease lost while NATS was out of reach is taken again (Remake) only
// if no other holder opened the journal or wrote the meta meanwhile;
// otherwise this server's copy is stale and it writes nothing more
// (ErrFenced: the client reconnects and the session resumes from the
// store). Calls that reach no server fail with ErrUnreachable, naming
// where it was asked; a failed write leaves the stored session as it
// was. A write waits at most 2 s for a connection that is down to come
// back; a publish no server answered within 2 s (in flight to a node
// that died: its successor never heard of it) is sent again, what of it
// landed taken back first, until the 10 s a call may take: a cluster's
// node lost delays writes by seconds and fails none.
package natsstore
