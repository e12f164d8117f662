// Package natsqueue is one review queue for a fleet: every `airlock serve
// --store nats://…` puts the requests its gate has waiting into NATS
// JetStream, and `airlock review --store nats://…` on any machine sees all
// of them, grouped as the socket broker's are, and decides them.
//
// What JetStream holds (P is the configured prefix, "airlock"):
//
//   - KV bucket P_reviews: "open.ID", one entry per waiting request: the
//     server that offers it (broker.ServerInfo with its host and a name
//     unique to the process) and the request's JSON when it is small
//     (most are: one write, one read), or the name and size of its body;
//     and
//     "server.NAME", a server's presence while it runs (Servers). When a
//     request is decided or withdrawn, its server updates the entry with
//     why (Gone) and then deletes it; a server killed leaves its entries,
//     so that a reviewer can still decide them.
//   - object store P_reviews_bodies: each larger request's JSON (the whole
//     diff, up to MaxBody), under "ID.SERVERNAME"; the object store chunks
//     it under the servers' payload limit.
//   - KV bucket P_reviews_decisions: "ID", the one decision of a request,
//     as its reviewer signed it (approval.SignedDecision). Reviewers
//     write it, servers only read it. A reviewer creates it
//     (compare-and-set on absence: of two reviewers deciding at once one
//     gets ErrAlreadyDecided naming the other), or takes the place of
//     one a server refused. Entries expire after DecisionTTL.
//   - KV bucket P_reviews_outcomes: "ID.NONCE", what the server that has
//     ID pending made of the decision of that nonce. Servers write it,
//     reviewers only read it. The server claims a decision by creating
//     it ("applying": of two servers one wins), takes it to
//     gate.ResolveSigned (which verifies the signature, and records the
//     decision in the ledger before the push acts, as with the socket)
//     and writes the outcome: "applied" with the decision as the gate
//     recorded it, or "refused" with the gate's error (a forged or stale
//     decision, a refused hunk selection), which frees the request for
//     another decision. Entries expire after DecisionTTL.
//
// Request ids are stable across a restart (Gate.Resubmit offers a waiting
// request again under its old id), and decisions are keyed by id alone: a
// decision made while no server had the request pending waits in the
// bucket, and the server that offers that id again (the same server
// restarted, or another that resumed the session) applies it when it
// offers it. A decision is signed over approval.Fingerprint of what the
// reviewer saw; a server whose request of that id differs refuses it, so
// an approval never covers changes nobody saw.
// A request whose decision the ledger holds is never offered again
// (approval.Gate.Resubmit): a server whose ledger holds it settles the
// queue's entries of it (final.go: a dead server's claim it recorded,
// under the same signature, is written "applied" in the outcomes bucket,
// any other decision refused as already decided, the stale offer
// dropped).
//
// Both sides watch the buckets (a request reaches a reviewer in about a
// millisecond; BenchmarkRequestSeen compares it with the socket) and
// also read them every 2 s: a watch that a NATS node's stop interrupts
// takes up to 20 s to resume. A server renews "server.NAME" as often; a
// decision a server took ("applying") whose presence has lapsed is
// applied by the server that has the request now.
//
// Everything read from the queue is hostile until checked: entries that
// are not JSON, too large, of no server, whose body is missing, larger
// than said or not the request its key names are ignored with a warning
// (Options.Warn) and change nothing; a decision for a request no server
// has pending changes nothing until one offers it. Strings from the queue
// that reach an error message are sanitised (internal/termsafe); the
// review screen sanitises the rest.
//
// Trust: a decision opens the door only when a reviewer's key the server
// trusts signed it over the request it has waiting (Gate.ResolveSigned);
// one written by anyone else (whoever can write P_reviews_decisions) is
// refused, written as "refused" in the outcomes, warned of, and recorded
// in the ledger (ledger.KindRefused). NATS permissions are the second
// guard: docs/fleet.md gives servers a user that cannot write decisions,
// and reviewers one that can write nothing else; neither side changes the
// decisions bucket's configuration (open), so servers need no right to.
package natsqueue
