// Package shortid owns how a hash is abbreviated for people, in one way
// across airlock's messages: a git object id as its first 7 hex digits (as
// `git log --oneline` shows it, and as git_push and git_diff accept it
// back), a ledger hash (SHA-256 hex) as its first 12.
package shortid
