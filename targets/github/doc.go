// Package github is the GitHub target (github:OWNER/REPO): a repository
// on GitHub written through the Git Data API and read over git's smart
// HTTP protocol, behind targets.Target.
//
// Push creates the granted chain's trees and commits (text inline in tree
// entries, SHAs checked against the staged ones) and moves the branch
// without forcing; retries cannot create a second ref or commit (push.go).
// Fetch pulls a lazy base: one shallow partial fetch (filter blob:none),
// one REST listing of the tree for the blobs' sizes, one fetch of the few
// blobs the tree check reads (fetch.go); every other blob is fetched by id
// when first read, judged by its listed size before it is inflated
// (source.go). The ledger's head is kept under refs/airlock/ledger/KEY
// through the same API (ledgerhead.go).
//
// The package registers the github kind in targets' registry from its
// init (kind.go): targets cannot import it, as it imports targets. Package
// worker imports it, so every program that parses a worker file (session,
// cmd/airlock) knows the kind; worker's TestEveryKindRegistered fails if
// it does not. Its options (targets.GitHubOptions, aliased Options) live
// in targets because the registry's Env carries them.
//
// Tests: targets/github_test.go and ghlazy_test.go run the target suite
// (targettest.Run), the blob-source suite and GitHub's own cases against
// targets/githubemu; they stay in targets' tests, next to the local
// targets they share helpers with.
package github
