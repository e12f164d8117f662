package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/session"
	workerfile "github.com/airlock-dev/airlock/worker"
)

func TestLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8787": true, "[::1]:8787": true, "localhost:0": true,
		"0.0.0.0:8787": false, ":8787": false, "192.168.1.5:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if err := loopbackOnly(addr); (err == nil) != ok {
			t.Errorf("%s: %v, want accepted %v", addr, err, ok)
		}
	}
}

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
func testSandboxes(t testing.TB, token string, max int) (*httptest.Server, *sandboxes) {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	w := workerfile.Default(emptyRepo(t))
	sbs := newSandboxes(w, "", session.Options{Gate: approval.NewGate(l, approval.Policy{})}, "", "test", token, max, 1<<40, time.Hour, io.Discard)
	ts := httptest.NewServer(httpHandler(sbs))
	sbs.base = ts.URL + mcpPath
	t.Cleanup(func() { ts.Close(); sbs.Close() })
	return ts, sbs
}

// TestDeadServersTokenFilesGo: the token file of an HTTP server that is
// gone (killed: it never removed it) is removed by the next one; a
// running server's stays.
func TestDeadServersTokenFilesGo(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, fmt.Sprintf("http-%d.token", dead.Process.Pid))
	running := filepath.Join(dir, "http-1.token") // init runs
	for _, f := range []string{gone, running} {
		if err := os.WriteFile(f, []byte("t\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, mine, err := newHTTPToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the dead server's token file is still there: %v", err)
	}
	for _, f := range []string{running, mine} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
