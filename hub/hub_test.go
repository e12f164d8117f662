package hub

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
	"github.com/airlock-dev/airlock/internal/mcptest"
	"github.com/airlock-dev/airlock/internal/rpcguard"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

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

// testHub is a hub of a worker on an empty repository, its sessions saved
// under root ("": in memory), at most max of them, unloaded after idle.
func testHub(t testing.TB, root, token string, max int, idle time.Duration, base string) *Hub {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	w := worker.Default(emptyRepo(t))
	lim := rpcguard.ForMaxFile(memfs.DefaultLimits().MaxFileBytes)
	return New(Config{Worker: w, WorkerKey: "default:test", Options: session.Options{Gate: approval.NewGate(l, approval.Policy{})},
		Root: root, Version: "test", Token: token, MaxLive: max, MaxBytes: 1 << 40, Idle: idle, Base: base,
		Limits: lim, SDKBodyMax: lim.MaxBytes + 64<<10, Log: io.Discard})
}

// sandboxesAt serves testHub on a loopback port with the token
// "server-token", and returns its endpoint.
func sandboxesAt(t testing.TB, root string, max int, idle time.Duration) (string, *Hub) {
	t.Helper()
	ln := listenLoopback(t)
	sbs := testHub(t, root, "server-token", max, idle, "http://"+ln.Addr().String()+Path)
	srv := &http.Server{Handler: sbs.Handler()}
	go srv.Serve(ln)
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
		h  *mcptest.Headers
	}
	clients := make([]client, 3)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, h, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token")
			if err != nil {
				t.Error(err)
				return
			}
			clients[i] = client{cs, h}
			mcptest.CallText(ctx, t, cs, "write_file", map[string]any{"path": "mine.txt", "content": strings.Repeat("x", i+1)})
			mcptest.CallText(ctx, t, cs, "write_file", map[string]any{"path": "only-" + string(rune('a'+i)) + ".txt", "content": "hi"})
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ids := map[string]bool{}
	for i, c := range clients {
		defer c.cs.Close()
		if c.h.ID == "" || c.h.Own == "" || ids[c.h.ID] {
			t.Fatalf("client %d: session %q, token %q (ids so far %v)", i, c.h.ID, c.h.Own, ids)
		}
		ids[c.h.ID] = true
		got, _ := mcptest.CallText(ctx, t, c.cs, "read_file", map[string]any{"path": "mine.txt"})
		if !strings.Contains(got, strings.Repeat("x", i+1)) || strings.Contains(got, strings.Repeat("x", i+2)) {
			t.Errorf("client %d reads mine.txt as %q", i, got)
		}
		list, _ := mcptest.CallText(ctx, t, c.cs, "list_files", map[string]any{"path": "."})
		for j := range clients {
			name := "only-" + string(rune('a'+j)) + ".txt"
			if strings.Contains(list, name) != (i == j) {
				t.Errorf("client %d lists %q:\n%s", i, name, list)
			}
		}
	}
	// A client with its own token comes back to its own session...
	a, b := clients[0].h, clients[1].h
	cs, _, err := mcptest.ConnectHTTP(ctx, t, a.URL, a.Own)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := mcptest.CallText(ctx, t, cs, "read_file", map[string]any{"path": "only-a.txt"}); !strings.Contains(got, "hi") {
		t.Errorf("back in its session, client a reads %q", got)
	}
	cs.Close()
	// ...and no other: not with another's token, nor with the server's.
	for _, c := range []struct{ what, url, token string }{
		{"b's token at a's address", a.URL, b.Own},
		{"the server's token at a's address", a.URL, "server-token"},
		{"a's token for a new session", endpoint, a.Own},
		{"a made-up session", endpoint + "/20990101-000000-deadbeef", a.Own},
	} {
		if _, _, err := mcptest.ConnectHTTP(ctx, t, c.url, c.token); err == nil {
			t.Errorf("%s: connected", c.what)
		}
	}
	// A request for b's MCP session with a's token is refused.
	if code, body := mcptest.RawPost(t, endpoint, a.Own, clients[1].cs.ID(), mcptest.ToolsList); code != http.StatusForbidden || !strings.Contains(body, "does not open session "+b.ID) {
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
		cs, _, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token")
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
	}
	_, _, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token")
	if err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("a third client: %v", err)
	}
	_, body := mcptest.RawPost(t, endpoint, "server-token", "", mcptest.Initialize)
	mustContain(t, "the refusal", body, "this server is full: 2 sessions (at most 2, --max-sessions)", "a higher --max-sessions")

	// Saved sessions idle long enough, their clients gone, make room, and
	// come back on their tokens.
	endpoint, sbs := sandboxesAt(t, t.TempDir(), 1, 0)
	first, h1, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token")
	if err != nil {
		t.Fatal(err)
	}
	mcptest.CallText(ctx, t, first, "write_file", map[string]any{"path": "kept.txt", "content": "kept\n"})
	// While its client is connected, a session is never unloaded.
	if _, _, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token"); err == nil {
		t.Fatalf("a second client got in while the first is connected")
	}
	oldMCP := first.ID()
	first.Close()
	waitReleased(sbs, h1.ID)
	second, h2, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token")
	if err != nil {
		t.Fatalf("a second client, the first gone: %v", err)
	}
	sbs.mu.Lock()
	_, firstLive := sbs.live[h1.ID]
	sbs.mu.Unlock()
	if firstLive || h2.ID == h1.ID {
		t.Fatalf("the idle session was not unloaded (live %v, ids %s %s)", firstLive, h1.ID, h2.ID)
	}
	// A request of the first's old MCP session is told how to come back.
	if code, body := mcptest.RawPost(t, endpoint, h1.Own, oldMCP, mcptest.ToolsList); code != http.StatusNotFound || !strings.Contains(body, h1.URL) {
		t.Errorf("the unloaded session's MCP session: %d %s", code, body)
	}
	second.Close()
	waitReleased(sbs, h2.ID)
	back, _, err := mcptest.ConnectHTTP(ctx, t, h1.URL, h1.Own)
	if err != nil {
		t.Fatalf("resuming the unloaded session: %v", err)
	}
	defer back.Close()
	if got, _ := mcptest.CallText(ctx, t, back, "read_file", map[string]any{"path": "kept.txt"}); !strings.Contains(got, "kept") {
		t.Errorf("after resuming: %q", got)
	}
}

func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q is missing from:\n%s", what, w, got)
		}
	}
}

// waitReleased waits until no request of session id is in flight (a
// client's Close returns before the server has seen its stream end).
func waitReleased(h *Hub, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sb := h.live[id]; sb != nil && sb.active > 0; sb = h.live[id] {
		h.released.Wait()
	}
}

// The hub asks a session whether it is busy, and closes it, without its
// own lock held: each takes the session's lock, which a call in another
// sandbox must never wait behind. Meanwhile a request for the sandbox
// being unloaded waits, and then finds it gone.
func TestUnloadWithoutTheHubsLock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	endpoint, sbs := sandboxesAt(t, t.TempDir(), 1, 0)
	asked := 0
	sbs.busy = func(s *session.Session) bool {
		asked++
		if !sbs.mu.TryLock() {
			t.Error("the hub's lock is held while a session is asked whether it is busy")
		} else {
			sbs.mu.Unlock()
		}
		return s.Busy()
	}
	first, h1, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token")
	if err != nil {
		t.Fatal(err)
	}
	mcptest.CallText(ctx, t, first, "write_file", map[string]any{"path": "kept.txt", "content": "kept\n"})
	first.Close()
	waitReleased(sbs, h1.ID)
	second, h2, err := mcptest.ConnectHTTP(ctx, t, endpoint, "server-token")
	if err != nil {
		t.Fatalf("a second client, the first gone: %v", err)
	}
	defer second.Close()
	if asked != 1 || h2.ID == h1.ID {
		t.Errorf("asked %d times whether busy; sessions %s and %s", asked, h1.ID, h2.ID)
	}
}
