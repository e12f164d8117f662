// Package gitread reads a local repository's objects in place, through
// git itself: the blob source of a lazy base pulled from a repository on
// this machine (Source, a staging.BlobSource and BlobStreamSource).
//
// It owns the pool of long-lived `git cat-file --batch` processes (one
// per core at most, each bounded by RLIMIT_DATA, every object's header
// judged before its body is read), the one `git ls-tree -r -t -l` that
// lists a pulled commit's trees and blob sizes (ListTree: trees rebuilt
// from the listing and checked against their ids), the fetch of a partial
// clone's missing blobs from its promisor remote (FetchMissing), and the
// reads of a working tree's checked-out files (openat2 beneath its top,
// taken only when they hash to the blob's id or git's index vouches for
// them) that spare git the inflating.
//
// Why git and not go-git: see catFile. The repository is hostile until
// checked; every git it runs reads through a gitenv.Neutral (none of the
// repository's config, hooks or promisor settings), and git's own lazy
// fetch never runs: a missing blob is fetched by FetchMissing and
// fetchOne, from the promisor remote's URL.
//
// It imports staging (the store it lists into), memfs (path limits),
// targets/internal/transfer (what a copying pull reads through, and the
// size error) and targets/internal/gitenv; targets.Local makes a Source
// per repository and targets.OpenSource one for a resumed session.
package gitread
