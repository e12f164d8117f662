package main

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestBoundedLines(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"content":"` + strings.Repeat("x", 500) + `"}}}` + "\n"
	bigNoID := `{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"` + strings.Repeat("y", 500) + `"}}` + "\n"
	bigStrID := `{"id":"call-\"9\"","jsonrpc":"2.0","params":"` + strings.Repeat("z", 500) + `"}` + "\n"
	in := "{\"a\":1}\n" + big + "{\"b\":2}\n" + bigNoID + bigStrID + "{\"c\":3}"
	var out bytes.Buffer
	b := newBoundedLines(strings.NewReader(in), &lockedWriter{w: &out}, 100)
	// A tiny buffer on the reading side: lines still come through whole.
	got, err := io.ReadAll(io.LimitReader(b, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "{\"a\":1}\n{\"b\":2}\n{\"c\":3}" {
		t.Errorf("passed through %q", got)
	}
	answers := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(answers) != 2 || !strings.Contains(answers[0], `"id":7`) || !strings.Contains(answers[1], `"id":"call-\"9\""`) {
		t.Fatalf("answers:\n%s", out.String())
	}
	for _, a := range answers {
		if !strings.Contains(a, `"code":-32600`) || !strings.Contains(a, "larger than 100 B") || !strings.Contains(a, "max_file_bytes") {
			t.Errorf("answer %s does not say what was wrong and what to do", a)
		}
	}
}

// Over the real protocol: a client sends a request too large to read; it
// gets an error for that call, and the session goes on.
func TestOversizedRequestOverMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	type echoArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "len " + strconv.Itoa(len(a.Text))}}}, nil, nil
	})
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	out := &lockedWriter{w: s2cW}
	go srv.Run(ctx, &mcp.IOTransport{Reader: newBoundedLines(c2sR, out, 64<<10), Writer: out})
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": strings.Repeat("x", 100<<10)}})
	if err == nil || !strings.Contains(err.Error(), "larger than 64 KiB") {
		t.Fatalf("an oversized call: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
	if err != nil || res.IsError {
		t.Fatalf("the next call: %v", err)
	}
	if tc := res.Content[0].(*mcp.TextContent); tc.Text != "len 5" {
		t.Errorf("the next call said %q", tc.Text)
	}
}
