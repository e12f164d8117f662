// Package store is where a durable session's state outlives the process
// that holds it: the Store interface every place of keeping implements
// (the local state directory, package files, first; a fleet's shared
// store later), and the data it keeps besides the journal's records: a
// session's Meta (who it is for, which server it belongs to: Binding),
// its Summary (counts for people) and its Listing.
//
// A Store hands out a Lease on one session: held by one opener at a time
// (a second is refused with ErrSessionBusy), through which the session's
// journal is appended to, replayed and rewritten whole. Nothing here
// names a file: what a record holds is package record's, where it lies
// an implementation's. Every implementation runs the conformance suite in
// package storetest.
package store
