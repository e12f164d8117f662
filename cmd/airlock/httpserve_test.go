package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/session"
	workerfile "github.com/airlock-dev/airlock/worker"
)

// sessionHeaders sends a bearer token and remembers the Airlock-Session
// headers the server answered with.
type sessionHeaders struct {
	token string
	mu    sync.Mutex
	id    string
	own   string // the session's own token
	url   string
}

func (s *sessionHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.Header.Get("Airlock-Session") != "" {
		s.mu.Lock()
		s.id = resp.Header.Get("Airlock-Session")
		s.url = resp.Header.Get("Airlock-Session-Url")
		if t := resp.Header.Get("Airlock-Session-Token"); t != "" {
			s.own = t
		}
		s.mu.Unlock()
	}
	return resp, err
}

func connectHTTP(ctx context.Context, t testing.TB, endpoint, token string) (*mcp.ClientSession, *sessionHeaders, error) {
	t.Helper()
	h := &sessionHeaders{token: token}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: h}}, nil)
	return cs, h, err
}

func callText(ctx context.Context, t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return resultText(res), res.IsError
}

// emptyRepo is a repository without a commit: the default worker on it
// starts with an empty workspace.
func emptyRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return dir
}

// sandboxesAt is testSandboxes with sessions saved under root ("": in
// memory) and an idle time.
func sandboxesAt(t testing.TB, root string, max int, idle time.Duration) (string, *sandboxes) {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	w := workerfile.Default(emptyRepo(t))
	sbs := newSandboxes(w, "", session.Options{Gate: approval.NewGate(l, approval.Policy{})}, root, "test", "server-token", max, 1<<40, idle, io.Discard)
	srv := &http.Server{Handler: httpHandler(sbs)}
	ln := listenLoopback(t)
	go srv.Serve(ln)
	sbs.base = "http://" + ln.Addr().String() + mcpPath
	t.Cleanup(func() { srv.Close(); sbs.Close() })
	return sbs.base, sbs
}

// Three clients at once, each in a sandbox of its own: none sees another's
// files, each gets its own session and token, and a token opens only its
// own session.
func TestHTTPClientsAreIsolated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	endpoint, _ := sandboxesAt(t, "", 8, time.Hour)
	type client struct {
		cs *mcp.ClientSession
		h  *sessionHeaders
	}
	clients := make([]client, 3)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, h, err := connectHTTP(ctx, t, endpoint, "server-token")
			if err != nil {
				t.Error(err)
				return
			}
			clients[i] = client{cs, h}
			callText(ctx, t, cs, "write_file", map[string]any{"path": "mine.txt", "content": strings.Repeat("x", i+1)})
			callText(ctx, t, cs, "write_file", map[string]any{"path": "only-" + string(rune('a'+i)) + ".txt", "content": "hi"})
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ids := map[string]bool{}
	for i, c := range clients {
		defer c.cs.Close()
		if c.h.id == "" || c.h.own == "" || ids[c.h.id] {
			t.Fatalf("client %d: session %q, token %q (ids so far %v)", i, c.h.id, c.h.own, ids)
		}
		ids[c.h.id] = true
		got, _ := callText(ctx, t, c.cs, "read_file", map[string]any{"path": "mine.txt"})
		if !strings.Contains(got, strings.Repeat("x", i+1)) || strings.Contains(got, strings.Repeat("x", i+2)) {
			t.Errorf("client %d reads mine.txt as %q", i, got)
		}
		list, _ := callText(ctx, t, c.cs, "list_files", map[string]any{"path": "."})
		for j := range clients {
			name := "only-" + string(rune('a'+j)) + ".txt"
			if strings.Contains(list, name) != (i == j) {
				t.Errorf("client %d lists %q:\n%s", i, name, list)
			}
		}
	}
	// A client with its own token comes back to its own session...
	a, b := clients[0].h, clients[1].h
	cs, _, err := connectHTTP(ctx, t, a.url, a.own)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := callText(ctx, t, cs, "read_file", map[string]any{"path": "only-a.txt"}); !strings.Contains(got, "hi") {
		t.Errorf("back in its session, client a reads %q", got)
	}
	cs.Close()
	// ...and no other: not with another's token, nor with the server's.
	for _, c := range []struct{ what, url, token string }{
		{"b's token at a's address", a.url, b.own},
		{"the server's token at a's address", a.url, "server-token"},
		{"a's token for a new session", endpoint, a.own},
		{"a made-up session", endpoint + "/20990101-000000-deadbeef", a.own},
	} {
		if _, _, err := connectHTTP(ctx, t, c.url, c.token); err == nil {
			t.Errorf("%s: connected", c.what)
		}
	}
	// A request for b's MCP session with a's token is refused.
	if code, body := rawPost(t, endpoint, a.own, clients[1].cs.ID(), toolsList); code != http.StatusForbidden || !strings.Contains(body, "does not open session "+b.id) {
		t.Errorf("a's token on b's MCP session: %d %s", code, body)
	}
}

// The server's sessions are bounded: a client past --max-sessions is
// refused with what to do, unless an idle saved session can be unloaded,
// which then resumes on its token.
func TestHTTPSessionBounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// In memory: nothing can be unloaded.
	endpoint, _ := sandboxesAt(t, "", 2, 0)
	for range 2 {
		cs, _, err := connectHTTP(ctx, t, endpoint, "server-token")
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
	}
	_, _, err := connectHTTP(ctx, t, endpoint, "server-token")
	if err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("a third client: %v", err)
	}
	_, body := rawPost(t, endpoint, "server-token", "", initialize)
	mustContain(t, "the refusal", body, "this server is full: 2 sessions (at most 2, --max-sessions)", "a higher --max-sessions")

	// Saved sessions idle long enough, their clients gone, make room, and
	// come back on their tokens.
	endpoint, sbs := sandboxesAt(t, t.TempDir(), 1, time.Millisecond)
	first, h1, err := connectHTTP(ctx, t, endpoint, "server-token")
	if err != nil {
		t.Fatal(err)
	}
	callText(ctx, t, first, "write_file", map[string]any{"path": "kept.txt", "content": "kept\n"})
	// While its client is connected, a session is never unloaded.
	if _, _, err := connectHTTP(ctx, t, endpoint, "server-token"); err == nil {
		t.Fatalf("a second client got in while the first is connected")
	}
	oldMCP := first.ID()
	first.Close()
	time.Sleep(20 * time.Millisecond)
	second, h2, err := connectHTTP(ctx, t, endpoint, "server-token")
	if err != nil {
		t.Fatalf("a second client, the first gone: %v", err)
	}
	sbs.mu.Lock()
	_, firstLive := sbs.live[h1.id]
	sbs.mu.Unlock()
	if firstLive || h2.id == h1.id {
		t.Fatalf("the idle session was not unloaded (live %v, ids %s %s)", firstLive, h1.id, h2.id)
	}
	// A request of the first's old MCP session is told how to come back.
	if code, body := rawPost(t, endpoint, h1.own, oldMCP, toolsList); code != http.StatusNotFound || !strings.Contains(body, h1.url) {
		t.Errorf("the unloaded session's MCP session: %d %s", code, body)
	}
	second.Close()
	time.Sleep(20 * time.Millisecond)
	back, _, err := connectHTTP(ctx, t, h1.url, h1.own)
	if err != nil {
		t.Fatalf("resuming the unloaded session: %v", err)
	}
	defer back.Close()
	if got, _ := callText(ctx, t, back, "read_file", map[string]any{"path": "kept.txt"}); !strings.Contains(got, "kept") {
		t.Errorf("after resuming: %q", got)
	}
}

const (
	initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	toolsList  = `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
)

// rawPost posts one JSON-RPC message, with a token and an MCP session id
// ("": none), and returns the status and the body.
func rawPost(t testing.TB, url, token, mcpSession, msg string) (int, string) {
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

func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
