// Package targets is where commits go and files come from: a local
// working-tree repository (local:PATH), a local bare repository
// (local-bare:PATH) and GitHub (github:OWNER/REPO), behind one small
// Target interface and one conformance suite (targets/targettest).
//
// Push requires an approval.Grant naming the target, the ref, the commit
// the ref holds and the commit to push; a target checks all four, moves the
// ref only from exactly the old commit to exactly the new one, and never
// forces. Local pushes go through git-receive-pack, so git's own ref
// locking makes the update a compare-and-swap that coordinates with a git
// CLI writing at the same moment; a push to a checked-out branch updates
// the working tree and index too, and is refused, naming the paths, when
// uncommitted changes are in the way. GitHub pushes go through the Git
// Data API (text inline in tree entries, SHAs checked against the staged
// ones, retries that cannot create a second ref or commit); see package
// targets/github, which registers its kind here (Register).
//
// Fetch copies a branch's commit and its trees into a staging.Store and
// leaves the blobs where they are (a lazy base: staging.BlobSource): a
// local repository's are read from its packs in place, GitHub's fetched by
// id over smart HTTP, each when it is first read. Only the blobs the tree
// check reads (links, .gitmodules and the like) are copied at once. From
// a local repository Fetch reads the object database directly; from
// GitHub it makes one shallow partial fetch (filter blob:none), one REST
// listing of the tree for the blobs' sizes, and one fetch of those few
// blobs.
//
// After a push lands, Local and GitHub also keep the ledger's head under
// refs/airlock/ledger/KEY (RecordLedgerHead, see LedgerHead): the one
// write outside a grant, of airlock's own small commits to airlock's own
// ref, never a branch.
//
// A push reads what it needs of its target once per attempt (ReadFacts:
// the ref, its head, the default branch, whether a push writes files; one
// call to a FactsReader such as Local), and whether it landed is decided
// in one place (Landed): from Push's answer where it says, from the branch
// otherwise, for the push's driver and for the resume of a push a restart
// cut short alike.
//
// The machinery below the targets lives in packages of its own: gitdir (a
// repository's layout from git's files, no process), ledgerhead (the
// ledger's head and its ref), internal/gitread (a local repository read in
// place through git: the local blob source), internal/transfer (the
// objects a push sends and the pack they go in; a fetched pack, bounded;
// a commit copied into the store), internal/worktree (writing a working
// tree without following links), internal/gitenv (the environment and
// configuration of every git airlock runs: no program a repository names
// runs) and internal/httpretry (GitHub's
// retrying transport). The GitHub target is package github (targets/github).
// targettest holds the suites every target (Run) and every blob source
// (SourceSuite) runs.
package targets
