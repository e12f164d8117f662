//go:build unix

package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds the token to every request of a client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// airlock serve --http runs with stdin at /dev/null, prints its endpoint
// and token once, refuses requests without the token, and serves a real
// MCP client that sends it.
func TestServeHTTPWithToken(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := t.TempDir()
	env := isolatedEnv(t, root)
	repo := filepath.Join(root, "project")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# P\n"), 0o644)
	mustGit(t, env, repo, "init", "-q", "-b", "main")
	mustGit(t, env, repo, "add", "-A")
	mustGit(t, env, repo, "commit", "-qm", "init")

	_, endpoint, token, tokenFile := startHTTPServe(t, bin, env, repo, "127.0.0.1:0")
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file %s: %v %v", tokenFile, fi, err)
	} else if data, _ := os.ReadFile(tokenFile); strings.TrimSpace(string(data)) != token {
		t.Errorf("the token file holds %q", data)
	}
	resp, err := http.Post(endpoint, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("without the token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "notes.md", "content": "# P\n"}}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.md"}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "# P") {
		t.Fatalf("read_file over HTTP: %v %s", err, resultText(res))
	}
}

// startHTTPServe starts airlock serve --http in dir and returns its
// endpoint and server token.
func startHTTPServe(t *testing.T, bin string, env []string, dir, addr string, args ...string) (cmd *exec.Cmd, endpoint, token, tokenFile string) {
	t.Helper()
	serve := exec.Command(bin, append([]string{"serve", "--http", addr}, args...)...)
	serve.Env, serve.Dir = env, dir
	devnull, _ := os.Open(os.DevNull)
	t.Cleanup(func() { devnull.Close() })
	serve.Stdin = devnull // it never reads it
	stderr, _ := serve.StderrPipe()
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	endpointRe := regexp.MustCompile(`at (http://\S+/mcp)$`)
	tokenRe := regexp.MustCompile(`Bearer ([0-9a-f]{64})" \(the token is also in (\S+),`)
	sc := bufio.NewScanner(stderr)
	for (endpoint == "" || token == "") && sc.Scan() {
		if m := endpointRe.FindStringSubmatch(sc.Text()); m != nil {
			endpoint = m[1]
		}
		if m := tokenRe.FindStringSubmatch(sc.Text()); m != nil {
			token, tokenFile = m[1], m[2]
		}
	}
	if endpoint == "" || token == "" {
		t.Fatalf("airlock serve --http did not print its endpoint and token (it exited? %v)", sc.Err())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return serve, endpoint, token, tokenFile
}

// A client of airlock serve --http comes back to its own session with its
// token after the server was killed and started again; airlock sessions
// list shows the HTTP sessions.
func TestServeHTTPResumeAfterKill(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := t.TempDir()
	env := isolatedEnv(t, root)
	repo := filepath.Join(root, "project")
	initRepo(t, env, repo, map[string]string{"README.md": "# P\n"})
	serve, endpoint, token, _ := startHTTPServe(t, bin, env, repo, "127.0.0.1:0")
	cs, h, err := mcptest.ConnectHTTP(ctx, t, endpoint, token)
	if err != nil {
		t.Fatal(err)
	}
	mcptest.CallText(ctx, t, cs, "write_file", map[string]any{"path": "work.md", "content": "work in progress\n"})
	if out, isErr := mcptest.CallText(ctx, t, cs, "git_stage", map[string]any{"files": []string{"work.md"}, "message": "Start the work"}); isErr {
		t.Fatal(out)
	}
	mcptest.CallText(ctx, t, cs, "write_file", map[string]any{"path": "later.md", "content": "later\n"})
	other, _, err := mcptest.ConnectHTTP(ctx, t, endpoint, token)
	if err != nil {
		t.Fatal(err)
	}
	mcptest.CallText(ctx, t, other, "write_file", map[string]any{"path": "other.md", "content": "not yours\n"})
	out, errOut, code := runAirlock(t, env, root, "sessions", "list")
	if code != 0 || strings.Count(out, "http") < 2 || !strings.Contains(out, h.ID) {
		t.Errorf("airlock sessions list exited %d:\n%s%s", code, out, errOut)
	}

	serve.Process.Kill()
	serve.Wait()
	cs.Close()
	other.Close()
	// The same port: the client's address for its session stays good.
	addr := strings.TrimSuffix(strings.TrimPrefix(endpoint, "http://"), "/mcp")
	_, endpoint2, _, _ := startHTTPServe(t, bin, env, repo, addr)
	if endpoint2 != endpoint {
		t.Fatalf("restarted at %s, not %s", endpoint2, endpoint)
	}
	back, _, err := mcptest.ConnectHTTP(ctx, t, h.URL, h.Own)
	if err != nil {
		t.Fatalf("resuming after the restart: %v", err)
	}
	defer back.Close()
	st, _ := mcptest.CallText(ctx, t, back, "git_status", nil)
	mustContain(t, "git_status after the restart", st, "Start the work", "+ later.md")
	if list, _ := mcptest.CallText(ctx, t, back, "list_files", map[string]any{"path": "."}); strings.Contains(list, "other.md") {
		t.Errorf("the resumed session sees another client's file:\n%s", list)
	}
}
