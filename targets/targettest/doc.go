// Package targettest is the conformance suite every Target passes: each
// target's test file fills in a Harness and calls Run.
package targettest
