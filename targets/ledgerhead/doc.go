// Package ledgerhead owns the ledger's head as a target keeps it: the
// record (Head), the ref it is kept under, one per ledger (Ref, At), the
// small commit that holds it and how it is read back from a hostile
// target (Text, Message, Parse: only 64-hex-digit hashes), the rule that
// the ref only moves forward (Ahead, AheadError), and, for a repository
// on this machine, the commit written and read with go-git (WriteCommit,
// Read). It imports only go-git.
//
// targets' Local and GitHub move the ref (RecordLedgerHead) and read it
// (ReadLedgerHead); targets names the types as LedgerHead,
// LedgerAheadError and ErrNotLedgerHead, so that session and ledger
// verify need not import this package.
package ledgerhead
