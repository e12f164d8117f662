// Package transfer owns the git objects that move between a sandbox's
// staging.Store and a target, in both directions.
//
// Out: which objects a push sends (ToSend: the commits in between and
// what each one's parent lacks, identical subtrees skipped by hash), the
// whole-tree check every pushed commit passes first (CheckOutgoing), and
// the version 2 pack they are sent in (WritePack, compressed in parallel
// by a deflater shaped for the receiving git's inflate).
//
// In: a fetched pack held within the sandbox's room and judged object by
// object by the size each declares before anything is inflated (Bounded),
// and a commit copied with its trees, and the blobs asked for, from any
// object reader into the store (CopyCommit), each object's size checked
// before it is read.
//
// It runs no git process and knows no target: targets (Local, GitHub)
// and targets/internal/gitread call it.
package transfer
