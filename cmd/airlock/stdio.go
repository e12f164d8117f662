package main

import (
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/lockedwriter"
	"github.com/airlock-dev/airlock/internal/rpcguard"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/memfs"
	workerfile "github.com/airlock-dev/airlock/worker"
)

// messageLimits bound one JSON-RPC message of the worker's client, over
// stdio and HTTP alike: large enough for every legal write_file whatever
// its escaping.
func messageLimits(w *workerfile.Worker) rpcguard.Limits {
	maxFile := w.Limits.MaxFileBytes
	if maxFile <= 0 {
		maxFile = memfs.DefaultLimits().MaxFileBytes
	}
	return rpcguard.ForMaxFile(maxFile)
}

// guardedStdio is the MCP transport over the client's stdin and stdout:
// every message is scanned by rpcguard before the SDK reads it, and one it
// refuses (too large, too deep, a batch, not JSON-RPC) is answered with a
// JSON-RPC error and dropped, never ending the session. The SDK's own line
// bound is set above the guard's, so that it never ends a session on a
// message the guard let through.
func guardedStdio(stdin io.Reader, stdout io.Writer, lim rpcguard.Limits, stderr io.Writer) *mcp.IOTransport {
	// Whole-message writes: the SDK writes each message in one Write, and
	// the guard's answers go between them, never inside.
	out := lockedwriter.New(stdout)
	in := rpcguard.NewReader(stdin, out, lim, func(why string) {
		fmt.Fprintf(stderr, "airlock serve: refused a message from the client: %s\n", termsafe.Line(why))
	})
	return &mcp.IOTransport{Reader: in, Writer: out, MaxLineLength: sdkLineLength(lim)}
}

// sdkLineLength is the SDK's bound on one frame: the guard's, the newline
// (and a carriage return) and slack, so that only the guard ever refuses.
func sdkLineLength(lim rpcguard.Limits) int { return int(lim.MaxBytes) + 64<<10 }
