package hub

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/mcptest"
)

const pingMsg = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// A token the server never gave out gets 401 on every path and method,
// before its body is read; a session's own token opens only its session.
func TestHTTPWrongTokenEveryPath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	endpoint, sbs := sandboxesAt(t, t.TempDir(), 8, time.Hour)
	cs, h, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	other, oh, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// A saved session that is not live: its token is checked against
	// what it recorded.
	other.Close()
	sbs.mu.Lock()
	saved := sbs.live[oh.ID]
	delete(sbs.live, oh.ID)
	sbs.mu.Unlock()
	saved.sess.Close()

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tc := range []struct {
		name, method, url, token, mcpID, body string
		want                                  int
	}{
		{"ping at /mcp", "POST", endpoint, "wrong", "", pingMsg, 401},
		{"ping at /mcp/anything", "POST", endpoint + "/anything", "wrong", "", pingMsg, 401},
		{"ping at a live session's path", "POST", endpoint + "/" + h.ID, "wrong", "", pingMsg, 401},
		{"ping at a saved session's path", "POST", endpoint + "/" + oh.ID, "wrong", "", pingMsg, 401},
		{"initialize at /mcp", "POST", endpoint, "wrong", "", initialize, 401},
		{"initialize at a session's path", "POST", endpoint + "/" + h.ID, "wrong", "", initialize, 401},
		{"initialize at a saved session's path", "POST", endpoint + "/" + oh.ID, "wrong", "", initialize, 401},
		{"a call in a live MCP session", "POST", endpoint, "wrong", cs.ID(), mcptest.ToolsList, 401},
		{"a call in an MCP session that is gone", "POST", endpoint, "wrong", oh.ID + ".x", mcptest.ToolsList, 401},
		{"GET of a live MCP session", "GET", endpoint, "wrong", cs.ID(), "", 401},
		{"DELETE of a live MCP session", "DELETE", endpoint, "wrong", cs.ID(), "", 401},
		{"an oversized body", "POST", endpoint + "/x", "wrong", "", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5<<20) + `"}}`, 401},
		{"the server's token, ping at /mcp", "POST", endpoint, "server-token", "", pingMsg, 200},
		{"a session's token, ping at its path", "POST", endpoint + "/" + h.ID, h.Own, "", pingMsg, 200},
		{"a saved session's token, ping at its path", "POST", endpoint + "/" + oh.ID, oh.Own, "", pingMsg, 200},
		{"a session's token, ping at /mcp", "POST", endpoint, h.Own, "", pingMsg, 403},
		{"a session's token, ping at another's path", "POST", endpoint + "/" + oh.ID, h.Own, "", pingMsg, 403},
		// Known to no session the request names or that is live: as good
		// as wrong (the server does not read every saved session to tell).
		{"a saved session's token at a live one's path", "POST", endpoint + "/" + h.ID, oh.Own, "", pingMsg, 401},
	} {
		req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+tc.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.mcpID != "" {
			req.Header.Set("Mcp-Session-Id", tc.mcpID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
		if tc.want == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
	}
}

// Bodies are bounded over HTTP as lines are over stdio: each bad one is
// answered with a JSON-RPC error for its id, the session goes on, and a
// legal write larger than the SDK's own 4 MiB bound goes through.
func TestHTTPBodiesBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	endpoint, _ := sandboxesAt(t, "", 8, time.Hour)
	cs, _, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// 9 MiB of newlines: 18 MiB of JSON.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "nl.txt", "content": strings.Repeat("\n", 9<<20)}})
	if err != nil || res.IsError {
		t.Fatalf("a legal 9 MiB write over HTTP: %v %v", err, res)
	}
	deep := func(n int) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"d","content":` +
			strings.Repeat("[", n-3) + strings.Repeat("]", n-3) + `}}}`
	}
	for _, tc := range []struct {
		name, body string
		code       int
		id, says   string
	}{
		{"nesting 1001", deep(1001), 400, "7", "deeper than 1000"},
		{"nesting 100000", deep(100000), 400, "7", "deeper than 1000"},
		{"a batch", `[{"jsonrpc":"2.0","id":8,"method":"tools/list"}]`, 400, "[8]", "batches are not supported"},
		{"too many values", `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":[` + strings.Repeat("0,", 100_000) + `0]}}`, 400, "9", "more than 100000 values"},
		{"not JSON", `hello`, 400, "null", "parse error"},
		{"a notification too deep", `{"jsonrpc":"2.0","method":"n","params":{"x":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}}`, 400, "null", "deeper than 1000"},
		{"too large", `{"jsonrpc":"2.0","id":10,"method":"ping","params":{"x":["` + strings.Repeat("a", 9<<20) + `"` + strings.Repeat(`,"`+strings.Repeat("a", 9<<20)+`"`, 6) + `]}}`, 413, "10", "larger than 61 MiB"},
		{"a string over max_file_bytes", `{"jsonrpc":"2.0","id":11,"method":"ping","params":{"x":"` + strings.Repeat("a", 10<<20+1) + `"}}`, 400, "11", "a string longer than 10 MiB"},
	} {
		code, body := mcptest.RawPost(t, endpoint, "server-token", cs.ID(), tc.body)
		var ans struct {
			ID    json.RawMessage `json:"id"`
			Error struct{ Message string }
		}
		b := strings.TrimSpace(body)
		if strings.HasPrefix(b, "[") {
			var list []json.RawMessage
			json.Unmarshal([]byte(b), &list)
			if len(list) == 1 {
				b = string(list[0])
				tc.id = strings.Trim(tc.id, "[]")
			}
		}
		json.Unmarshal([]byte(b), &ans)
		if code != tc.code || string(ans.ID) != tc.id || !strings.Contains(ans.Error.Message, tc.says) {
			t.Errorf("%s: %d %.300s; want %d, id %s, %q", tc.name, code, body, tc.code, tc.id, tc.says)
		}
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_files", Arguments: map[string]any{"path": "nl.txt"}}); err != nil || mcptest.ResultText(res) != "nl.txt (9 MiB)" {
		t.Fatalf("the session after: %v %v", err, res)
	}
	// The SDK's client hears a refusal as the call's error, and its
	// session goes on.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "big", "content": strings.Repeat("b", 11<<20)}})
	if err == nil || !strings.Contains(err.Error(), "a string longer than 10 MiB") {
		t.Errorf("an oversized call through the SDK's client: %v", err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_files", Arguments: map[string]any{"path": "."}}); err != nil || res.IsError {
		t.Fatalf("the session after a refusal: %v %v", err, res)
	}
}
