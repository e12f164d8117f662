package hub

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/rpcguard"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/worker"
)

// Path is the Streamable HTTP endpoint: Path for a new session (with the
// server's token), Path/ID for session ID again (with its own token).
const Path = "/mcp"

// Config is what a Hub serves and within which bounds.
type Config struct {
	Worker     *worker.Worker
	WorkerKey  string // names the worker whose saved sessions a client may resume (see session.Meta)
	WorkerFile string // the worker's file, absolute; "" for the default worker
	// Options are every session's, without State.
	Options session.Options
	// Root is the sessions directory; "" keeps sandboxes in memory only.
	Root string
	// Store keeps the sessions instead of Root's files (a fleet's
	// JetStream); a store that says who holds a session (Holders) has
	// the requests for a session another server holds forwarded to it.
	Store store.Store
	// Advertise is the address other servers of a fleet reach this one
	// at (the owner its leases record), http://HOST:PORT.
	Advertise string
	Version   string
	// Token is the server's bearer token.
	Token    string
	MaxLive  int
	MaxBytes int64
	// Idle is how long a sandbox goes unused before it may be unloaded.
	Idle time.Duration
	// Base is the endpoint as clients reach it, http://ADDR/mcp.
	Base string
	// Binding is the worker's file, targets and the operator's policy:
	// saved sessions resume only under the same.
	Binding session.Binding
	// Limits bound one request's body; SDKBodyMax is the SDK's own bound,
	// set above them so that only the guard refuses.
	Limits     rpcguard.Limits
	SDKBodyMax int64
	// Log receives the operator's lines.
	Log io.Writer
}

// Hub is the sessions of an HTTP server.
//
// Routing needs no table: each sandbox's MCP server hands out MCP session
// ids prefixed with the sandbox's id ("ID.random"), so a request's
// Mcp-Session-Id names its sandbox, and the request's token must be the
// server's or that sandbox's. The SDK then checks, by the user id this
// handler gives it (the sandbox's id), that the MCP session is that
// sandbox's.
type Hub struct {
	w          *worker.Worker
	workerKey  string
	workerFile string
	opts       session.Options // without State
	store      store.Store     // the sessions; nil keeps sandboxes in memory only
	fleet      *fleet          // nil: no other server may hold a session
	version    string
	server     [32]byte // the hash of the server's token
	maxLive    int
	maxBytes   int64
	idle       time.Duration   // how long a sandbox goes unused before it may be unloaded
	base       string          // the endpoint, http://ADDR/mcp
	bind       session.Binding // the worker's file, targets and the operator's policy: saved sessions resume only under the same
	stderr     io.Writer
	sdk        http.Handler
	front      *sandboxSess // answers requests outside any MCP session
	cop        *http.CrossOriginProtection
	lim        rpcguard.Limits // of one request's body

	// busy asks a session whether it must stay open (session.Busy; a
	// test's in place of it checks the lock order).
	busy func(*session.Session) bool

	mu       sync.Mutex
	released *sync.Cond // on mu: broadcast when a request ends
	live     map[string]*sandboxSess
	starting int                      // sandboxes being made: their slots are taken
	opening  map[string]chan struct{} // sandboxes being resumed or unloaded, closed when done: requests for them wait
	closed   bool
}

// sandboxSess is one live session of the HTTP server.
type sandboxSess struct {
	id   string
	hash [32]byte // of its token
	sess *session.Session
	srv  *mcp.Server
	// guarded by Hub.mu
	active int       // requests in flight (an open event stream counts)
	last   time.Time // when the last request ended
}

type sandboxKey struct{}

// isLoopback reports whether a host (with or without a port) is a loopback
// name or address.
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func hashToken(t string) [32]byte { return sha256.Sum256([]byte(t)) }

// New makes the hub c describes; it serves nothing until its Handler is.
func New(c Config) *Hub {
	h := &Hub{w: c.Worker, workerKey: c.WorkerKey, workerFile: c.WorkerFile, opts: c.Options, store: c.Store, version: c.Version,
		server: hashToken(c.Token), maxLive: c.MaxLive, maxBytes: c.MaxBytes, idle: c.Idle, base: c.Base, bind: c.Binding,
		stderr: c.Log, live: map[string]*sandboxSess{}, opening: map[string]chan struct{}{}, lim: c.Limits,
		busy: (*session.Session).Busy}
	h.released = sync.NewCond(&h.mu)
	if h.store == nil && c.Root != "" {
		h.store = session.Local(c.Root)
	}
	if hs, ok := h.store.(Holders); ok && c.Advertise != "" {
		h.fleet = newFleet(hs, c.Advertise)
	}
	sdk := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if sb, ok := r.Context().Value(sandboxKey{}).(*sandboxSess); ok {
			return sb.srv
		}
		return nil
	}, &mcp.StreamableHTTPOptions{
		// The guard has bounded the body already: the SDK's own 4 MiB
		// would refuse legal writes.
		MaxRequestBodyBytes: c.SDKBodyMax})
	// Browsers' cross-origin requests are refused in front of the SDK's
	// handler (ServeHTTP), as its docs advise in place of its deprecated
	// option: every request, the SDK's included, passes that door first.
	h.cop = http.NewCrossOriginProtection()
	// The SDK records the user of an MCP session when it opens and refuses
	// requests for it from anyone else: the user is the sandbox.
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		sb, ok := r.Context().Value(sandboxKey{}).(*sandboxSess)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: sb.id, Expiration: time.Now().Add(24 * time.Hour)}, nil
	}
	h.sdk = auth.RequireBearerToken(verify, nil)(sdk)
	// What answers outside any session: airlock's name and instructions,
	// no tools and no sandbox.
	h.front = &sandboxSess{id: "front", srv: mcp.NewServer(&mcp.Implementation{Name: "airlock", Title: "airlock sandbox", Version: c.Version},
		&mcp.ServerOptions{Instructions: "airlock gives every client a sandbox of its own once it initializes."})}
	return h
}

// Handler serves the hub at Path (a new session, with the server's
// token) and Path/ID (session ID again, with its own token). A web page in
// the user's browser can reach a loopback port too: the SDK refuses Host
// headers that are not loopback (DNS rebinding), and cross-origin requests
// are refused, so no page can drive a sandbox or read what it pulled.
// Another user of the machine can reach a loopback port as well: every
// request must carry a bearer token only this user can read or that a
// session was given.
func (h *Hub) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	mux.Handle(Path+"/", h)
	mux.HandleFunc(AlivePath, alive)
	return mux
}

// httpError is an answer that is not the SDK's: a status and what to do.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &httpError{code, "airlock: " + fmt.Sprintf(format, args...)}
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
	http.Error(w, msg, http.StatusUnauthorized)
}

func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Before anything else: a sandbox is made before the SDK runs. (The
	// SDK checks the Host again; cross-origin requests only this door.)
	if err := h.cop.Check(r); err != nil {
		http.Error(w, "airlock: "+err.Error(), http.StatusForbidden)
		return
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopback(la.String()) && !isLoopback(r.Host) {
		http.Error(w, fmt.Sprintf("airlock: forbidden: the Host header %q is not a loopback address", r.Host), http.StatusForbidden)
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		unauthorized(w, "airlock: missing bearer token: send the header \"Authorization: Bearer TOKEN\" with the token airlock serve printed at start (also in its token file), or a session's own token")
		return
	}
	pathID := strings.Trim(strings.TrimPrefix(r.URL.Path, Path), "/")
	g, known := h.authorize(r, hashToken(token), pathID)
	if !known {
		// Before the body is read: a stranger costs nothing.
		unauthorized(w, "airlock: wrong bearer token: send the token airlock serve printed at start (also in its token file), or a session's own token")
		return
	}
	method, ok := h.readBody(w, r)
	if !ok {
		return
	}
	sb, created, err := h.pick(r, g, pathID, method == "initialize")
	if away := (*elsewhere)(nil); errors.As(err, &away) {
		if h.relay(w, r, away) {
			return // forwarded to its holder, or answered why not
		}
		sb, created, err = h.pick(r, g, pathID, method == "initialize") // its dead holder's lease broken
	}
	if err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			he = &httpError{http.StatusInternalServerError, "airlock: " + err.Error()}
		}
		if he.code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
		}
		http.Error(w, he.msg, he.code)
		return
	}
	defer h.release(sb)
	w.Header().Set("Airlock-Session", sb.id)
	w.Header().Set("Airlock-Session-Url", h.base+"/"+sb.id)
	if created != "" {
		w.Header().Set("Airlock-Session-Token", created)
	}
	h.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sandboxKey{}, sb)))
}

// readBody bounds a POST's body before anything decodes it, as over stdio,
// and returns its JSON-RPC method; a body the guard refuses is answered
// here (ok false).
func (h *Hub) readBody(w http.ResponseWriter, r *http.Request) (method string, ok bool) {
	if r.Method != http.MethodPost {
		return "", true
	}
	body, err := rpcguard.ReadBody(io.LimitReader(r.Body, h.lim.MaxBytes+1), h.lim)
	if err != nil {
		http.Error(w, "airlock: "+err.Error(), http.StatusBadRequest)
		return "", false
	}
	if body.Refused {
		code := http.StatusBadRequest
		if body.TooLarge {
			code = http.StatusRequestEntityTooLarge
		}
		fmt.Fprintf(h.stderr, "airlock serve: refused a request: %s\n", termsafe.Line(body.Why))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write(append(body.Reply(), '\n'))
		return "", false
	}
	r.Body = io.NopCloser(body.Reader())
	return body.Method, true
}

// Close closes every sandbox (durable ones are saved) and says how many.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	// A sandbox being unloaded is closed by who unloads it, one being
	// resumed joins the others: wait for both.
	for len(h.opening) > 0 {
		for id := range h.opening {
			h.waitLocked(id)
			break
		}
	}
	ids := make([]string, 0, len(h.live))
	for id := range h.live {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	list := h.live
	h.live = map[string]*sandboxSess{}
	h.mu.Unlock()
	for _, id := range ids {
		list[id].sess.Close()
	}
	if len(ids) > 0 {
		what := "closed"
		if h.store != nil {
			what = "saved"
		}
		fmt.Fprintf(h.stderr, "airlock serve: %s %d session(s): %s\n", what, len(ids), strings.Join(ids, ", "))
	}
}
