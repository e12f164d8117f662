// Package broker carries push requests and decisions between airlock
// servers and reviewers, because an MCP server cannot prompt on its own
// stdin: the agent owns it.
//
// Each server Listens on a private Unix socket (0700 directory, 0600
// socket) in the rendezvous directory both sides compute the same way
// whatever the client did to the environment (SocketDir, StateDir). A
// reviewer Watches that directory and connects to every server, keeping
// each server's requests apart (two servers may offer the same id) and
// grouping them by server, session and repository (Grouped); decisions
// are taken only from a peer whose SO_PEERCRED user is the server's own.
// The gate still decides what is granted: a reviewer's message names a
// verdict, never a commit.
//
// A decision opens the door only when signed: the Reviewer signs each
// with its key (SetKey; approval.Sign over the request as received), and
// the server hands it to gate.ResolveSigned, which applies it only under
// a key the server trusts and over the request it has waiting, and
// records a refusal in the ledger. The local broker's trust boundary is
// the user: a process of the server's own user passes the peer check and
// can read the reviewer's key file (reviewer.nk in StateDir) as the
// reviewer does, so it can decide; a process of the user without the key
// (or of another user) cannot.
//
// Another source of requests (a fleet's queue, approval/broker/natsqueue)
// feeds the same Reviewer, so the review screen does not know where a
// request came from: NewReviewer, Offer and Take add and take back an
// Incoming under a server key of the source's (never a socket's path),
// each with a Decider that takes its decision to its server; ErrQueued
// says a decision was kept for a server not running now.
package broker
