package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A connection that sends no whole request is closed once the header
// timeout passes, and past the bound on waiting connections a new one is
// closed at once; a whole request still gets its answer (before the
// bounds, 19,950 connections held open by a stranger never closed).
func TestHTTPStrangersCannotHoldConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "answered") }), 300*time.Millisecond, 4)
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	partial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// closedWithin reports whether the server closed c within d.
	closedWithin := func(c net.Conn, d time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(d))
		_, err := io.ReadAll(c)
		var ne net.Error
		return !errors.As(err, &ne) || !ne.Timeout() // EOF or a reset: closed by the server; a timeout: still open
	}
	var held []net.Conn
	for range 4 {
		held = append(held, partial())
	}
	time.Sleep(50 * time.Millisecond) // the server has counted them
	if over := partial(); !closedWithin(over, 200*time.Millisecond) {
		t.Errorf("a fifth waiting connection over a bound of 4 stayed open")
	}
	for i, c := range held {
		if !closedWithin(c, 2*time.Second) {
			t.Errorf("connection %d, headers never finished, still open 2 s after a 300 ms header timeout", i)
		}
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "answered") {
		t.Errorf("a whole request after them: %s %q", resp.Status, body)
	}
}
