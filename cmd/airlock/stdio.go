package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sync"

	"github.com/airlock-dev/airlock/internal/bytesize"
)

// boundedLines passes the client's newline-delimited JSON-RPC messages to
// the MCP server, except a message longer than max: that one is dropped as
// it streams in, never held whole, and the client is answered with an
// error for its request id. The session and everything in the sandbox go
// on: one hostile or mistaken request costs nothing.
type boundedLines struct {
	r     *bufio.Reader
	max   int
	out   *lockedWriter
	buf   []byte // what the server has yet to read
	limit string // max, for people
}

// lockedWriter serialises whole-message writes: the SDK writes each message
// in one Write, and boundedLines' answers go between them, never inside.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

func newBoundedLines(r io.Reader, out *lockedWriter, max int) *boundedLines {
	return &boundedLines{r: bufio.NewReaderSize(r, 64<<10), max: max, out: out, limit: bytesize.Format(int64(max))}
}

func (b *boundedLines) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		line, err := b.next()
		if len(line) > 0 && b.wellFormed(line) {
			b.buf = line
			break
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

func (b *boundedLines) Close() error { return nil }

// next returns the next line whole, or nothing when the line was too long
// (it has been answered then).
func (b *boundedLines) next() ([]byte, error) {
	var line []byte
	for {
		chunk, err := b.r.ReadSlice('\n')
		if len(line)+len(chunk) > b.max {
			head := append(line, chunk...)
			if len(head) > 4096 {
				head = head[:4096]
			}
			for err == bufio.ErrBufferFull {
				_, err = b.r.ReadSlice('\n')
			}
			b.refuse(head)
			if err != nil {
				return nil, err
			}
			return nil, nil
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// The id is near the start of a request as clients write them; a message
// whose id cannot be found there is dropped without an answer, as a
// notification would be.
var idRe = regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9]+)`)

func (b *boundedLines) refuse(head []byte) {
	m := idRe.FindSubmatch(head)
	if m == nil {
		return
	}
	msg := fmt.Sprintf("the request is larger than %s, the most this server reads in one message (six times sandbox.max_file_bytes, "+
		"plus room for the rest): nothing was done; write large files in parts, or raise max_file_bytes in the worker file", b.limit)
	b.answer(json.RawMessage(m[1]), -32600, msg)
}

// wellFormed reports whether line is a JSON-RPC 2.0 message the SDK can
// take. Anything else (not JSON, null, an array or batch, an object without
// a method or a result, an id that is neither a string nor a number, params
// that are neither an object nor an array) would end the SDK's session and
// lose the sandbox: it is answered with a JSON-RPC error here, as the
// specification says, and dropped. Blank lines are skipped.
func (b *boundedLines) wellFormed(line []byte) bool {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return false
	}
	if !json.Valid(trimmed) {
		b.answer(nil, -32700, "parse error: the line is not valid JSON; send one JSON-RPC 2.0 message per line")
		return false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil || m == nil {
		b.answer(nil, -32600, "invalid request: a message must be one JSON-RPC 2.0 object (batches are not supported)")
		return false
	}
	id, hasID := m["id"]
	if hasID && !validID(id) {
		b.answer(nil, -32600, "invalid request: the id must be a string or a number")
		return false
	}
	var idOut json.RawMessage
	if hasID {
		idOut = id
	}
	if v, ok := m["jsonrpc"]; !ok || string(bytes.TrimSpace(v)) != `"2.0"` {
		b.answer(idOut, -32600, `invalid request: "jsonrpc" must be "2.0"`)
		return false
	}
	method, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	switch {
	case hasMethod:
		var name string
		if err := json.Unmarshal(method, &name); err != nil || name == "" {
			b.answer(idOut, -32600, "invalid request: the method must be a non-empty string")
			return false
		}
		if params, ok := m["params"]; ok {
			p := bytes.TrimSpace(params)
			if len(p) == 0 || (p[0] != '{' && p[0] != '[') {
				b.answer(idOut, -32602, "invalid params: params must be an object")
				return false
			}
		}
	case (hasResult || hasError) && hasID:
		// A response to a request of the server's.
	default:
		b.answer(idOut, -32600, "invalid request: a message needs a method (a request or notification) or a result or error with an id (a response)")
		return false
	}
	return true
}

func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

// answer writes a JSON-RPC error for id (null when the id is unusable).
func (b *boundedLines) answer(id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	resp, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": msg},
	})
	b.out.Write(append(resp, '\n'))
}
