package mcptest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSON-RPC messages tests post raw.
const (
	Initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	ToolsList  = `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
)

// Headers sends a bearer token and remembers the Airlock-Session headers
// the server answered with.
type Headers struct {
	Token string
	mu    sync.Mutex
	ID    string // Airlock-Session
	Own   string // the session's own token (Airlock-Session-Token)
	URL   string // Airlock-Session-Url
}

// RoundTrip implements http.RoundTripper.
func (s *Headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.Header.Get("Airlock-Session") != "" {
		s.mu.Lock()
		s.ID = resp.Header.Get("Airlock-Session")
		s.URL = resp.Header.Get("Airlock-Session-Url")
		if t := resp.Header.Get("Airlock-Session-Token"); t != "" {
			s.Own = t
		}
		s.mu.Unlock()
	}
	return resp, err
}

// ConnectHTTP opens an MCP session at endpoint with token.
func ConnectHTTP(ctx context.Context, t testing.TB, endpoint, token string) (*mcp.ClientSession, *Headers, error) {
	t.Helper()
	h := &Headers{Token: token}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: h}}, nil)
	return cs, h, err
}

// CallText calls a tool and returns its text and whether it is an error;
// a protocol failure fails the test.
func CallText(ctx context.Context, t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ResultText(res), res.IsError
}

// ResultText is a result's text contents, joined by newlines.
func ResultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// RawPost posts one JSON-RPC message, with a token and an MCP session id
// ("": none), and returns the status and the body.
func RawPost(t testing.TB, url, token, mcpSession, msg string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(msg))
	req.Header.Set("Authorization", "Bearer "+token)
	if mcpSession != "" {
		req.Header.Set("Mcp-Session-Id", mcpSession)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Client is a test's side of an MCP session: tools called by name, their
// answers as text.
type Client struct {
	T  testing.TB
	CS *mcp.ClientSession
}

// Call calls a tool, within 30 seconds: its text, and whether it is a
// tool error. A protocol failure fails the test.
func (c *Client) Call(tool string, args map[string]any) (string, bool) {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return CallText(ctx, c.T, c.CS, tool, args)
}

// Instructions are the server's instructions at initialize.
func (c *Client) Instructions() string { return c.CS.InitializeResult().Instructions }
