package hub

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A page in the user's browser can reach a loopback port: neither a
// cross-origin request nor a rebound host name gets through.
func TestHTTPRefusesBrowsers(t *testing.T) {
	ts, _ := testSandboxes(t, "secret-token", 4)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	post := func(mod func(*http.Request)) int {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(init))
		req.Header.Set("Authorization", "Bearer secret-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		mod(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(func(*http.Request) {}); code != http.StatusOK {
		t.Fatalf("a local client got %d", code)
	}
	if code := post(func(r *http.Request) {
		r.Header.Set("Origin", "https://evil.example")
		r.Header.Set("Sec-Fetch-Site", "cross-site")
	}); code != http.StatusForbidden {
		t.Errorf("a cross-origin request got %d, want 403", code)
	}
	if code := post(func(r *http.Request) { r.Host = "evil.example:80" }); code != http.StatusForbidden {
		t.Errorf("a rebound host name got %d, want 403", code)
	}
	// Another local user, without the token, gets nowhere.
	if code := post(func(r *http.Request) { r.Header.Del("Authorization") }); code != http.StatusUnauthorized {
		t.Errorf("a request without the token got %d, want 401", code)
	}
	if code := post(func(r *http.Request) { r.Header.Set("Authorization", "Bearer secret-tokem") }); code != http.StatusUnauthorized {
		t.Errorf("a request with a wrong token got %d, want 401", code)
	}
}

// testSandboxes serves in-memory sandboxes of a worker on an empty
// repository over HTTP, in process.
func testSandboxes(t testing.TB, token string, max int) (*httptest.Server, *Hub) {
	t.Helper()
	sbs := testHub(t, "", token, max, time.Hour, "")
	ts := httptest.NewServer(sbs.Handler())
	sbs.base = ts.URL + Path
	t.Cleanup(func() { ts.Close(); sbs.Close() })
	return ts, sbs
}
