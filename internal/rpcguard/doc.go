// Package rpcguard bounds JSON-RPC messages before any decoder sees them.
//
// The MCP Go SDK under airlock ends a whole session on one message it
// cannot take: a line over its length limit, JSON nested deeper than 1000,
// an id it cannot read, an error object of the wrong shape, a batch under
// the newest protocol. A session is a worker's sandbox, so one hostile or
// mistaken line would cost all of its work in flight and deafen the
// client. This package reads every message first, in one streaming pass
// that holds at most the message itself:
//
//   - its size (Limits.MaxBytes, derived from the largest file a worker
//     may write and the worst case of JSON escaping, so that every legal
//     write_file fits whatever its escaping);
//   - its nesting depth, counted as the SDK counts it;
//   - how many values it holds (array elements and object members), since
//     a decoder spends tens of bytes on each;
//   - how long each string is once decoded (Limits.MaxString, the largest
//     file: no argument can be larger), which refuses a message too large
//     for any tool early, before the SDK's decoding holds several copies;
//   - batches (refused: the newest protocol has none, and the SDK ends the
//     session on one);
//   - that it is UTF-8 JSON, one value on the line, with the members the SDK
//     requires of the types it requires.
//
// A message it refuses is answered with a JSON-RPC error that says what
// was too big and what to do instead, carrying the request's id when the
// scan found one (also past the point of refusal: a refused line is read
// to its end anyway, except past a syntax error or the depth bound, where
// following it further would cost memory), and dropped; the session goes
// on. A line too long to keep is dropped as it streams in, never held
// whole: refusing a message costs at most the line limit, however long
// the line.
//
// Reader serves newline-delimited stdio; ReadBody serves one HTTP body.
package rpcguard
