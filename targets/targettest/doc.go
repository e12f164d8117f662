// Package targettest holds the conformance suites of targets: every
// Target passes Run (each target's test file fills in a Harness), and
// every blob source of a lazy base passes SourceSuite (a SourceHarness:
// each blob of a real repository read as git cat-file gives it, missing
// and non-blob ids, max, concurrency, streams and their cancellation).
// Git and GitEnv run git as the tests of targets do.
package targettest
