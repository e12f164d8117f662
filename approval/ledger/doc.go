// Package ledger is airlock's tamper-evident record of every push request,
// decision, withdrawal and push outcome.
//
// A Ledger is append-only JSON Lines, hash-chained (each record carries the
// SHA-256 of the one before) and fsynced per record: a caller acts on an
// event only once it is on disk. Several processes may append to one file;
// appends lock it and read the chain's head from the file itself. An anchor
// file beside the ledger remembers the last record, so that a ledger cut
// short or deleted is noticed too. Verify finds edited, removed, reordered
// and torn records; Records reads them back.
package ledger
