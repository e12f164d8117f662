package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/rpcguard"
)

// Over the real protocol: a client sends a request too large to read; it
// gets an error for that call, and the session goes on.
// smallLimits make a small message too large.
var smallLimits = rpcguard.Limits{MaxBytes: 64 << 10, MaxDepth: rpcguard.DefaultDepth, MaxValues: rpcguard.DefaultValues, MaxBatch: rpcguard.DefaultBatch}

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
	go srv.Run(ctx, guardedStdio(c2sR, s2cW, smallLimits, io.Discard))
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

// Malformed JSON-RPC lines are answered with JSON-RPC errors and the
// session goes on: the next request works, on the same server.
func TestMalformedLinesDoNotEndTheSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ping", Description: "pong"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := srv.Run(ctx, guardedStdio(c2sR, s2cW, smallLimits, io.Discard))
		s2cW.Close() // a server that ended answers no more: the test fails, not hangs
		done <- err
	}()
	replies := bufio.NewScanner(s2cR)
	send := func(line string) { io.WriteString(c2sW, line+"\n") }
	reply := func() map[string]any {
		t.Helper()
		if !replies.Scan() {
			t.Fatalf("no reply: %v (server: %v)", replies.Err(), <-done)
		}
		var m map[string]any
		json.Unmarshal(replies.Bytes(), &m)
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	reply()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tc := range []struct {
		line string
		code float64
		id   any
	}{
		{`null`, -32600, nil},
		{`[]`, -32600, nil},
		{`{}`, -32600, nil},
		{`"hello"`, -32600, nil},
		{`{"jsonrpc":"2.0","id":{},"method":"tools/list"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, -32600, nil},
		{`{"jsonrpc":"1.0","id":3,"method":"tools/list"}`, -32600, float64(3)},
		{`{"jsonrpc":"2.0","id":4,"method":7}`, -32600, float64(4)},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"x"}`, -32602, float64(5)},
		{`{"jsonrpc":"2.0","id":6,"meth`, -32700, float64(6)},
		{`not json at all`, -32700, nil},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":[]}`, -32602, float64(8)},
	} {
		send(tc.line)
		m := reply()
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != tc.code || m["id"] != tc.id {
			t.Errorf("%s: answered %v, want code %v for id %v", tc.line, m, tc.code, tc.id)
		}
	}
	send(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"ping","arguments":{}}}`)
	if m := reply(); m["id"] != float64(42) || m["result"] == nil {
		t.Fatalf("the session did not go on: %v", m)
	}
}
