package main

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/mcptest"
	"github.com/airlock-dev/airlock/internal/scenario"
)

// The scenario suite through the real airlock serve, over stdio and over
// Streamable HTTP.
func TestScenarios(t *testing.T) {
	t.Run("stdio", func(t *testing.T) { scenario.Run(t, stdioDriver{}) })
	t.Run("http", func(t *testing.T) { scenario.Run(t, httpDriver{}) })
}

// serveArgs are airlock serve's flags for s.
func serveArgs(s scenario.Setup) []string {
	args := []string{"--worker", s.WorkerFile, "--run", "off"}
	for _, a := range s.AutoApprove {
		args = append(args, "--auto-approve", a)
	}
	if s.Ephemeral {
		args = append(args, "--ephemeral")
	}
	return args
}

type stdioDriver struct{}

// stdioClient is the client of an airlock serve it started, on its stdio.
type stdioClient struct {
	mcptest.Client
	s      scenario.Setup
	stderr *lockedBuffer
}

func (stdioDriver) Start(t *testing.T, s scenario.Setup) scenario.Client {
	serve := exec.Command(airlockBinary(t), append([]string{"serve"}, serveArgs(s)...)...)
	c := &stdioClient{Client: mcptest.Client{T: t}, s: s, stderr: &lockedBuffer{}}
	serve.Env, serve.Dir, serve.Stderr = s.Env, s.Dir, c.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "scenario", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	if c.CS, err = client.Connect(ctx, &mcp.CommandTransport{Command: serve, TerminateDuration: 10 * time.Second}, nil); err != nil {
		t.Fatalf("connecting: %v\n%s", err, c.stderr.String())
	}
	t.Cleanup(func() {
		c.CS.Close()
		if t.Failed() {
			t.Logf("airlock serve's stderr:\n%s", c.stderr.String())
		}
	})
	return c
}

// Await waits for airlock serve's stderr to hold every line of want.
func (c *stdioClient) Await(want ...string) string { return c.stderr.Await(want...) }

// Restart closes the client's stdin, which ends the server (a durable
// session saved), and starts the server again: it resumes the worker's
// unfinished session.
func (c *stdioClient) Restart(t *testing.T) scenario.Client {
	if err := c.CS.Close(); err != nil && !strings.Contains(err.Error(), "exit") {
		t.Logf("closing: %v", err)
	}
	return stdioDriver{}.Start(t, c.s)
}

type httpDriver struct{}

// httpClient is a client of an airlock serve --http it started.
type httpClient struct {
	mcptest.Client
	s        scenario.Setup
	serve    *exec.Cmd
	endpoint string
	h        *mcptest.Headers
}

func (httpDriver) Start(t *testing.T, s scenario.Setup) scenario.Client {
	return startHTTPClient(t, s, "127.0.0.1:0", "", "")
}

// startHTTPClient starts airlock serve --http on addr and connects: to the
// session at url with its own token, or to a new one ("").
func startHTTPClient(t *testing.T, s scenario.Setup, addr, url, own string) *httpClient {
	serve, endpoint, token, _ := startHTTPServe(t, airlockBinary(t), s.Env, s.Dir, addr, serveArgs(s)...)
	if url == "" {
		url, own = endpoint, token
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, h, err := mcptest.ConnectHTTP(ctx, t, url, own)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &httpClient{Client: mcptest.Client{T: t, CS: cs}, s: s, serve: serve, endpoint: endpoint, h: h}
}

// Restart stops the server with SIGTERM (its sessions saved) and starts it
// again at the same address: the client comes back to its session with
// the session's own token, or, in memory only, starts a new one.
func (c *httpClient) Restart(t *testing.T) scenario.Client {
	c.CS.Close()
	if err := c.serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	c.serve.Wait()
	addr := strings.TrimSuffix(strings.TrimPrefix(c.endpoint, "http://"), "/mcp")
	if c.s.Ephemeral {
		return startHTTPClient(t, c.s, addr, "", "")
	}
	return startHTTPClient(t, c.s, addr, c.h.URL, c.h.Own)
}
