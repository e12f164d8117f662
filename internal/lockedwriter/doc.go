// Package lockedwriter owns the one writer that serialises whole writes:
// a stream written from several goroutines (a process's stdout and stderr
// copied from two pipes, or the MCP SDK's messages and the message guard's
// answers) must never interleave two writes inside each other.
package lockedwriter
