//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/bytesize"
)

// rawServer is airlock serve over stdio driven line by line, as a client
// that writes whatever bytes it likes: the real binary, the real MCP
// protocol.
type rawServer struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan []byte // what the server wrote, a line at a time
	stderr  *lockedBuffer
	ended   chan struct{} // closed once the server has ended
	waitErr error         // how it ended
	pending [][]byte      // lines read ahead of the one looked for
	out     chan []byte
}

func startRaw(t *testing.T, args ...string) *rawServer {
	t.Helper()
	requireGit(t)
	root := t.TempDir()
	env := isolatedEnv(t, root)
	bare := filepath.Join(root, "target.git")
	mustGit(t, env, root, "init", "-q", "--bare", "-b", "main", bare)
	workerFile := filepath.Join(root, "w.md")
	if err := os.WriteFile(workerFile, []byte(fmt.Sprintf("---\nname: hostile-input\ngit:\n  default_target: {type: local-bare, path: %q, branch: main}\n---\n", bare)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(airlockBinary(t), append([]string{"serve", "--worker", workerFile}, args...)...)
	cmd.Env, cmd.Dir = env, root
	s := &rawServer{t: t, cmd: cmd, lines: make(chan []byte, 16), stderr: &lockedBuffer{}, ended: make(chan struct{}),
		out: make(chan []byte, 64)}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		for b := range s.out {
			s.stdin.Write(b)
		}
	}()
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				s.lines <- line
			}
			if err != nil {
				s.waitErr = cmd.Wait()
				close(s.ended)
				close(s.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(s.out)
		s.stdin.Close()
		cmd.Process.Kill()
		for range s.lines {
		}
		if t.Failed() {
			t.Logf("airlock serve's stderr:\n%.20000s", s.stderr.String())
		}
	})
	s.send([]byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}` + "\n"))
	if m := s.answer(`"init"`, 30*time.Second); m.Result == nil {
		t.Fatalf("initialize: %s", m.raw)
	}
	s.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	return s
}

// send writes bytes to the server's stdin, in order, in the background:
// a server that stopped reading must fail the test, not hang it.
func (s *rawServer) send(b []byte) { s.out <- b }

type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw []byte
}

func (a rpcAnswer) text() string {
	switch {
	case a.Error != nil:
		return a.Error.Message
	case a.Result != nil && len(a.Result.Content) > 0:
		return a.Result.Content[0].Text
	}
	return string(a.raw)
}

// answers parses a line of the server's: one answer, or a batch of them.
func answers(line []byte) []rpcAnswer {
	line = bytes.TrimSpace(line)
	var out []rpcAnswer
	if bytes.HasPrefix(line, []byte("[")) {
		var raws []json.RawMessage
		json.Unmarshal(line, &raws)
		for _, r := range raws {
			var a rpcAnswer
			json.Unmarshal(r, &a)
			a.raw = r
			out = append(out, a)
		}
		return out
	}
	var a rpcAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		a.raw = line
		return []rpcAnswer{a}
	}
	a.raw = line
	return []rpcAnswer{a}
}

// answer waits for the answer for id (its JSON), keeping the lines read
// on the way for the next look; it fails the test if the server ends or
// stays silent.
func (s *rawServer) answer(id string, wait time.Duration) rpcAnswer {
	s.t.Helper()
	for i, line := range s.pending {
		for _, a := range answers(line) {
			if string(a.ID) == id {
				s.pending = append(s.pending[:i:i], s.pending[i+1:]...)
				return a
			}
		}
	}
	timeout := time.After(wait)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("the server ended (%v) before answering id %s", s.waitErr, id)
			}
			for _, a := range answers(line) {
				if string(a.ID) == id {
					return a
				}
			}
			s.pending = append(s.pending, line)
		case <-timeout:
			s.t.Fatalf("no answer for id %s in %s: the server is deaf", id, wait)
		}
	}
}

// drain returns the lines the server wrote that no answer() took.
func (s *rawServer) drain() [][]byte {
	p := s.pending
	s.pending = nil
	return p
}

// call is a tools/call line.
func call(id, tool string, args map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	return append(b, '\n')
}

// escaped is s as a JSON string with every character written \uXXXX: the
// worst case of JSON escaping a client may choose.
func escaped(s string) string {
	var b strings.Builder
	b.Grow(6*len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		if r > 0xFFFF {
			r1, r2 := utf16Pair(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	b.WriteByte('"')
	return b.String()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

func writeLine(id, path, contentJSON string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"` + path + `","content":` + contentJSON + `}}}` + "\n")
}

func nested(id string, depth int) []byte {
	// The message is level 1, params 2, arguments 3: the content's arrays
	// make up the rest.
	n := depth - 3
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"deep","content":` +
		strings.Repeat("[", n) + strings.Repeat("]", n) + `}}}` + "\n")
}

// TestBadInputNeverEndsTheServer sends the real binary every kind of
// malformed, oversized and deeply nested message (the attacks of issue 22
// and more), each followed by a good call: each bad one is answered (or,
// as a notification or a response, dropped), the good one is answered,
// and the server lives on. Legal writes are written, whatever their
// escaping.
func TestBadInputNeverEndsTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("sends some 400 MB through the real binary")
	}
	parent := t
	s := startRaw(t, "--ephemeral")
	const mib = 1 << 20
	maxFile := 10 * mib // the default max_file_bytes
	newlines := strings.Repeat("\n", 9*mib)
	cjk := strings.Repeat("漢字かな", 9*mib/12) // 9 MiB of UTF-8
	newlinesJSON, _ := json.Marshal(newlines)
	array5M := `[0` + strings.Repeat(",0", 5_000_000-1) + `]`
	for _, tc := range []struct {
		name string
		msg  []byte
		// want: "error" (a JSON-RPC error), "ok" (a tool result that is
		// not an error), "tool error", or "" (no answer at all).
		want string
		says string // in the answer
	}{
		{"a 55 MB write_file (over max_file_bytes, under the line limit)", writeLine("1", "big", `"`+strings.Repeat("a", 55_000_000)+`"`), "error", "a string longer than 10 MiB"},
		{"a 70 MB line (over the line limit)", writeLine("2", "big", chunks(70_000_000)), "error", "larger than 61 MiB"},
		{"write_file of max_file_bytes + 1", writeLine("38", "big", `"`+strings.Repeat("a", maxFile+1)+`"`), "error", "a string longer than 10 MiB"},
		{"a 5,000,000-element array", writeLine("3", "arr", array5M), "error", "more than 100000 values"},
		{"a run with 20 MB of stdin", call("4", "run", map[string]any{"argv": []string{"wc", "-c"}, "stdin": strings.Repeat("s", 20_000_000)}), "error", "give a run a large input as a file"},
		{"a run with 9 MiB of stdin", call("39", "run", map[string]any{"argv": []string{"wc", "-c"}, "stdin": strings.Repeat("s", 9<<20)}), "answered", ""},
		{"write_file of 9 MiB of newlines (18 MiB escaped)", writeLine("5", "newlines.txt", string(newlinesJSON)), "ok", "newlines.txt"},
		{"write_file of 9 MiB of CJK text, every character \\u-escaped", writeLine("6", "cjk.txt", escaped(cjk)), "ok", "cjk.txt"},
		{"write_file of max_file_bytes, every byte \\u-escaped (60 MiB)", writeLine("7", "worst.txt", escaped(strings.Repeat("\x01", maxFile))), "ok", "worst.txt"},
		{"nesting 1000 (the SDK's own limit)", nested("8", 1000), "answered", ""},
		{"nesting 1001", nested("9", 1001), "error", "deeper than 1000"},
		{"nesting 1100", nested("10", 1100), "error", "deeper than 1000"},
		{"nesting 5000", nested("11", 5000), "error", "deeper than 1000"},
		{"nesting 10000", nested("12", 10000), "error", "deeper than 1000"},
		{"nesting 100000", nested("13", 100000), "error", "deeper than 1000"},
		{"nesting 10000000, unclosed", []byte(`{"jsonrpc":"2.0","id":14,"method":"ping","params":{"x":` + strings.Repeat("[", 10_000_000) + "\n"), "error", "deeper than 1000"},
		{"a batch", []byte(`[{"jsonrpc":"2.0","id":15,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"b","method":"ping"}]` + "\n"), "error", "batches are not supported"},
		{"a batch of 20000", []byte(`[` + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"},`, 19999) + `{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n"), "error null", "more than 1000 messages"},
		{"an empty batch", []byte("[]\n"), "error null", "empty batch"},
		{"empty lines", []byte("\n\n\r\n   \n\t\n"), "", ""},
		{"invalid UTF-8", []byte("{\"jsonrpc\":\"2.0\",\"id\":16,\"method\":\"tools/call\",\"params\":{\"name\":\"write_file\",\"arguments\":{\"path\":\"u\",\"content\":\"\xff\xfe\"}}}\n"), "error", "not UTF-8"},
		{"invalid UTF-8 outside strings", []byte("{\"jsonrpc\":\"2.0\",\"id\":17,\xff}\n"), "error", "parse error"},
		{"a NUL byte", []byte("{\"jsonrpc\":\"2.0\",\"id\":18,\"method\":\"ping\x00\"}\n"), "error", "control character"},
		{"top level null", []byte("null\n"), "error null", "one JSON-RPC 2.0 object"},
		{"top level number", []byte("42\n"), "error null", "one JSON-RPC 2.0 object"},
		{"top level string", []byte("\"tools/list\"\n"), "error null", "one JSON-RPC 2.0 object"},
		{"top level true", []byte("true\n"), "error null", "one JSON-RPC 2.0 object"},
		{"not JSON", []byte("hello, server\n"), "error null", "parse error"},
		{"truncated", []byte(`{"jsonrpc":"2.0","id":19,"method":"tools/ca` + "\n"), "error", "ends inside a string"},
		{"two values on a line", []byte(`{"jsonrpc":"2.0","id":20,"method":"ping"}{"jsonrpc":"2.0","id":21,"method":"ping"}` + "\n"), "error", "more than one JSON value"},
		{"the id twice", []byte(`{"jsonrpc":"2.0","id":22,"method":"ping","id":22}` + "\n"), "error", `"id" comes twice`},
		{"an object id", []byte(`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}` + "\n"), "error null", "the id must be"},
		{"a boolean id", []byte(`{"jsonrpc":"2.0","id":true,"method":"ping"}` + "\n"), "error null", "the id must be"},
		{"an id past 2^53", []byte(`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}` + "\n"), "error", "the id must be"},
		{"a fractional id", []byte(`{"jsonrpc":"2.0","id":2.5,"method":"ping"}` + "\n"), "error", "the id must be"},
		{"no jsonrpc member", []byte(`{"id":24,"method":"ping"}` + "\n"), "error", `"jsonrpc" must be "2.0"`},
		{"params an array", []byte(`{"jsonrpc":"2.0","id":25,"method":"tools/list","params":[]}` + "\n"), "error", "params must be an object"},
		{"params a string", []byte(`{"jsonrpc":"2.0","id":26,"method":"tools/call","params":"x"}` + "\n"), "error", "params must be an object"},
		{"method a number", []byte(`{"jsonrpc":"2.0","id":27,"method":7}` + "\n"), "error", "method must be a non-empty string"},
		{"neither request nor response", []byte(`{"jsonrpc":"2.0","id":28}` + "\n"), "error", "needs a method"},
		{"a response with an error of the wrong shape", []byte(`{"jsonrpc":"2.0","id":29,"error":{"code":"x","message":1}}` + "\n"), "", ""},
		{"a response whose error has its code twice, the first a string", []byte(`{"jsonrpc":"2.0","id":40,"error":{"code":"x","code":1,"message":"m"}}` + "\n"), "", ""},
		{"a response whose error has its message twice, the first a number", []byte(`{"jsonrpc":"2.0","id":41,"error":{"message":5,"message":"m","code":1}}` + "\n"), "", ""},
		{"a response to nothing", []byte(`{"jsonrpc":"2.0","id":30,"result":{}}` + "\n"), "", ""},
		{"an oversized notification", []byte(`{"jsonrpc":"2.0","method":"notifications/x","params":{"x":` + chunks(70_000_000) + `}}` + "\n"), "", ""},
		{"a deep notification", []byte(`{"jsonrpc":"2.0","method":"notifications/x","params":{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "}}\n"), "error null", "deeper than 1000"},
		{"an unknown method", []byte(`{"jsonrpc":"2.0","id":31,"method":"no/such"}` + "\n"), "error", ""},
		{"an unknown tool", call("32", "no_such_tool", nil), "answered", ""},
		{"arguments of the wrong type", []byte(`{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"write_file","arguments":{"path":7,"content":[]}}}` + "\n"), "answered", ""},
		{"a key of 1 MB", []byte(`{"jsonrpc":"2.0","id":34,"method":"ping","params":{"` + strings.Repeat("k", mib) + `":1}}` + "\n"), "answered", ""},
		{"an object of 200,000 members", []byte(`{"jsonrpc":"2.0","id":35,"method":"ping","params":{` + members(200_000) + `}}` + "\n"), "error", "more than 100000 values"},
		{"a 2 MB id", []byte(`{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 2*mib) + `","method":"ping"}` + "\n"), "error null", "the id must be"},
		{"a lone surrogate escape", writeLine("36", "sur.txt", `"\ud800"`), "answered", ""},
		{"CRLF line ending", []byte(`{"jsonrpc":"2.0","id":37,"method":"ping"}` + "\r\n"), "result", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			select {
			case <-s.ended:
				// An earlier case ended it (as it did before issue 22):
				// each case still gets its own verdict.
				t.Errorf("the server had ended: restarting it")
				s = startRaw(parent, "--ephemeral")
			default:
			}
			s.t = t
			s.send(tc.msg)
			next := strconv.Itoa(1000 + len(tc.name)*7919%100000)
			s.send(call(next, "list_files", map[string]any{"path": "."}))
			var got *rpcAnswer
			if id := idOf(tc.msg); tc.want != "" && !strings.HasPrefix(tc.want, "error null") && id != "" {
				a := s.answer(id, 120*time.Second)
				got = &a
			}
			if good := s.answer(next, 120*time.Second); good.Result == nil || good.Result.IsError {
				t.Fatalf("the good call after it: %s", good.raw)
			}
			rest := s.drain()
			if tc.want == "error null" {
				for _, line := range rest {
					if a := answers(line); len(a) == 1 && string(a[0].ID) == "null" {
						got = &a[0]
						rest = nil
					}
				}
				if got == nil {
					t.Fatalf("no answer with a null id; the server wrote %q", rest)
				}
			}
			if len(rest) > 0 {
				t.Errorf("answers to nothing asked: %.2000q", rest)
			}
			if tc.want == "" {
				return
			}
			if got == nil {
				t.Fatalf("no id found in the test's message")
			}
			switch tc.want {
			case "error", "error null":
				if got.Error == nil {
					t.Errorf("answered %.500s, want a JSON-RPC error", got.raw)
				}
			case "ok", "result":
				if got.Result == nil || got.Result.IsError {
					t.Errorf("answered %.500s, want a result", got.raw)
				}
			case "tool error":
				if got.Result == nil || !got.Result.IsError {
					t.Errorf("answered %.500s, want a tool error", got.raw)
				}
			}
			if !strings.Contains(got.text(), tc.says) {
				t.Errorf("answered %.500q, want %q in it", got.text(), tc.says)
			}
		})
	}
	s.t = t
	// What was written is whole.
	for _, f := range []struct {
		path string
		size int
	}{{"newlines.txt", len(newlines)}, {"cjk.txt", len(cjk)}, {"worst.txt", maxFile}} {
		s.send(call(`"stat"`, "list_files", map[string]any{"path": f.path}))
		a := s.answer(`"stat"`, 60*time.Second)
		if want := fmt.Sprintf("%s (%s)", f.path, bytesize.Format(int64(f.size))); a.Result == nil || a.text() != want {
			t.Errorf("list_files %s: %.500s, want %q", f.path, a.raw, want)
		}
	}
}

// chunks is a JSON array of strings of 9 MiB each, n bytes in all: a
// message over the line limit with no string over max_file_bytes.
func chunks(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for n > 0 {
		c := min(n, 9<<20)
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(strings.Repeat("c", c))
		b.WriteByte('"')
		n -= c
	}
	b.WriteByte(']')
	return b.String()
}

func members(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	return b.String()
}

// idOf finds the id of a test's message: the first "id": near its start
// or, for a batch, its first element's.
func idOf(msg []byte) string {
	head := msg[:min(len(msg), 200)]
	i := bytes.Index(head, []byte(`"id":`))
	if i < 0 {
		return ""
	}
	rest := head[i+5:]
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return ""
	}
	return string(rest[:end])
}

// vmHWM is the peak resident memory of process pid, from /proc.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// Refusing a line over the limit costs the server less than twice the
// line limit at its peak (its whole resident memory, measured by the
// kernel), however long the line: it is let go as it streams in.
func TestRefusalPeakMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 250 MB through the real binary")
	}
	const limit = 6*10<<20 + 1<<20 // the default max_file_bytes, six times, and 1 MiB
	for _, tc := range []struct {
		name string
		msg  func() []byte
	}{
		{"long", func() []byte {
			return writeLine("1", "big", chunks(2*limit))
		}},
		{"string", func() []byte {
			return writeLine("1", "big", `"`+strings.Repeat("a", 2*limit)+`"`)
		}},
		{"deep", func() []byte {
			return []byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":` + strings.Repeat("[", 2*limit) + "\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, "--ephemeral", "--run", "off")
			pid := s.cmd.Process.Pid
			before := vmHWM(t, pid)
			s.send(tc.msg())
			if a := s.answer("1", 120*time.Second); a.Error == nil {
				t.Fatalf("answered %.300s, want an error", a.raw)
			}
			s.send(call("2", "list_files", map[string]any{"path": "."}))
			if a := s.answer("2", 60*time.Second); a.Result == nil {
				t.Fatalf("the next call: %.300s", a.raw)
			}
			peak := vmHWM(t, pid)
			t.Logf("%s: peak RSS %s (%.2fx the line limit of %s; %s before it)", tc.name,
				bytesize.Format(peak), float64(peak)/limit, bytesize.Format(limit), bytesize.Format(before))
			if peak >= 2*limit {
				t.Errorf("peak RSS %s, over twice the line limit", bytesize.Format(peak))
			}
		})
	}
}
