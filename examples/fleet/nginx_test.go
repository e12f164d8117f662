package fleet_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// upstreams are three HTTP servers standing in for airlock-1..3 behind
// the example's nginx: each answers with its name and what it was sent,
// and /mcp/stream sends one server-sent event, then another only when
// told to.
type upstreams struct {
	servers []*httptest.Server
	release chan struct{}
}

func startUpstreams(t *testing.T) *upstreams {
	t.Helper()
	u := &upstreams{release: make(chan struct{})}
	for i := range 3 {
		name := fmt.Sprintf("airlock-%d", i+1)
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Served-By", name)
			w.Header().Set("X-Got-Authorization", r.Header.Get("Authorization"))
			if r.URL.Path == "/mcp/stream" {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: first\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-u.release:
				case <-r.Context().Done():
					return
				}
				fmt.Fprint(w, "data: second\n\n")
				return
			}
			_, _ = io.Copy(io.Discard, r.Body) // only that it came matters
		}))
		t.Cleanup(s.Close)
		u.servers = append(u.servers, s)
	}
	return u
}

// startNginx runs nginx with examples/fleet/nginx.conf, its upstreams and
// port made this machine's, and returns its address. The test needs
// nginx on PATH (Debian: nginx-light); without it, it is skipped.
func startNginx(t *testing.T, u *upstreams) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed (apt-get install nginx-light): the example's nginx.conf is not run here")
	}
	b, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	for i, s := range u.servers {
		from := fmt.Sprintf("server airlock-%d:8787", i+1)
		if !strings.Contains(conf, from) {
			t.Fatalf("nginx.conf has no %q", from)
		}
		conf = strings.Replace(conf, from, "server "+strings.TrimPrefix(s.URL, "http://"), 1)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // only its port was wanted
	if !strings.Contains(conf, "listen 8787;") {
		t.Fatal("nginx.conf does not listen on 8787")
	}
	conf = strings.Replace(conf, "listen 8787;", "listen "+addr+";", 1)
	dir := t.TempDir()
	// Its own files, not the machine's: temporary files, the pid, logs.
	temps := ""
	for _, k := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		temps += fmt.Sprintf("    %s_temp_path %s;\n", k, filepath.Join(dir, k))
	}
	conf = strings.Replace(conf, "http {\n", "http {\n"+temps+"    access_log off;\n", 1)
	file := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	global := fmt.Sprintf("daemon off; pid %s; error_log stderr;", filepath.Join(dir, "nginx.pid"))
	if out, err := exec.Command(bin, "-t", "-p", dir, "-c", file, "-g", global).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", file, "-g", global)
	var log lockedBuffer
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM: the master stops its workers too (a SIGKILL would
		// leave them running).
		_ = cmd.Process.Signal(syscall.SIGTERM) // the test's own nginx
		_ = cmd.Wait()                          // its exit status says nothing more
		if t.Failed() {
			t.Logf("nginx's log:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close() // it answers: ready
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatal("nginx did not listen in 10s")
		}
	}
}

// lockedBuffer is nginx's log, written by its processes while the test
// runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func servedBy(t *testing.T, method, url, session string) string {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer t0ken")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the headers matter
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Got-Authorization") != "Bearer t0ken" {
		t.Fatalf("%s %s: %s, the server got Authorization %q", method, url, resp.Status, resp.Header.Get("X-Got-Authorization"))
	}
	return resp.Header.Get("X-Served-By")
}

// TestNginxRoutesBySession runs the example's nginx.conf: a session's
// requests (by Mcp-Session-Id, or by the path /mcp/ID) go to one server,
// new sessions spread over all, the bearer token gets through, events
// stream as they come, and a server that is down is passed over.
func TestNginxRoutesBySession(t *testing.T) {
	u := startUpstreams(t)
	lb := startNginx(t, u)

	// Session ids as airlock makes them (store.NewID); MCP session ids
	// are ID.N.
	ids := []string{"20261125-064000-a1b2c3d4", "20261125-064101-d4e5f6a7", "20261125-064202-0789abcd", "20261125-064303-cdef0123"}
	seen := map[string]bool{}
	for _, id := range ids {
		first := servedBy(t, "POST", lb+"/mcp", id+".1")
		for n := range 10 {
			if got := servedBy(t, "POST", lb+"/mcp", fmt.Sprintf("%s.%d", id, n)); got != first {
				t.Fatalf("session %s: a request went to %s, another to %s", id, first, got)
			}
		}
		if got := servedBy(t, "GET", lb+"/mcp/"+id, ""); got != first {
			t.Fatalf("session %s: by header to %s, by path /mcp/%s to %s", id, first, id, got)
		}
		if got := servedBy(t, "POST", lb+"/mcp/"+id, id+".7"); got != first {
			t.Fatalf("session %s: by header to %s, by path and header to %s", id, first, got)
		}
	}
	for range 30 {
		seen[servedBy(t, "POST", lb+"/mcp", "")] = true
	}
	if len(seen) < 2 {
		t.Fatalf("30 new sessions all went to %v", seen)
	}
	if resp, err := http.Get(lb + "/"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /: %v %v; want 404", err, resp)
	}

	// An event reaches the client while the server's answer goes on.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", lb+"/mcp/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("the first event: %q %v (is the answer buffered?)", line, err)
	}
	close(u.release)

	// A server that is down: its sessions' requests go to another.
	down := servedBy(t, "POST", lb+"/mcp", ids[0]+".1")
	for i, s := range u.servers {
		if fmt.Sprintf("airlock-%d", i+1) == down {
			s.Close()
		}
	}
	if got := servedBy(t, "POST", lb+"/mcp", ids[0]+".2"); got == down {
		t.Fatalf("a request for session %s went to %s, which is down", ids[0], down)
	}
}
