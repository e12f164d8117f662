// Package githubemu is a GitHub API emulator for tests: an httptest server
// answering the REST endpoints airlock's GitHub target uses, backed by a
// real bare git repository on disk (so every SHA is git's own), and serving
// that repository over git's smart HTTP protocol through `git
// http-backend`, which, as GitHub does, serves partial fetches (filter
// blob:none) and wants of any object by id. Faults GitHub really produces can be injected: 409 for an
// empty repository, 422 for a non-fast-forward, 403 and 429 rate limits
// with Retry-After, 502, a connection dropped after the work was done
// but before the answer, and listings of trees truncated as GitHub's are
// past 100,000 entries.
//
// It answers what GitHub answers for the requests airlock makes, not the
// whole API.
package githubemu
