package main

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// A connection that has sent no whole request yet, or sits idle between
// two, is one anyone who can reach the port can hold: the bearer token is
// checked only once a request's headers are in. Without bounds, another
// user of the machine held 19,950 such connections open for as long as it
// liked, and with them nearly every file descriptor the server may have,
// which its ledger, journals and git need too. So a request's headers
// must come within headerTimeout, an idle connection goes after
// idleTimeout, and at most maxWaiting connections wait at once (past
// that, a new one is closed at once: a client retries, a flood gains
// nothing).
const (
	headerTimeout = 10 * time.Second
	idleTimeout   = 2 * time.Minute
	maxWaiting    = 512
)

// newHTTPServer serves h with those bounds.
func newHTTPServer(h http.Handler, header time.Duration, waiting int) *http.Server {
	l := &waitingConns{max: waiting, conns: map[net.Conn]bool{}}
	return &http.Server{Handler: h, ReadHeaderTimeout: header, IdleTimeout: idleTimeout, ConnState: l.state}
}

// waitingConns counts the connections waiting for a request.
type waitingConns struct {
	mu    sync.Mutex
	max   int
	conns map[net.Conn]bool
}

func (w *waitingConns) state(c net.Conn, s http.ConnState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch s {
	case http.StateNew, http.StateIdle:
		if len(w.conns) >= w.max {
			_ = c.Close() // the server sees it closed and lets it go
			return
		}
		w.conns[c] = true
	default:
		delete(w.conns, c)
	}
}
