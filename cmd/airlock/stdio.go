package main

import (
	"bufio"
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
		if len(line) > 0 {
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
	resp, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": json.RawMessage(m[1]),
		"error": map[string]any{"code": -32600, "message": msg},
	})
	b.out.Write(append(resp, '\n'))
}
