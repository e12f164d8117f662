package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/rpcguard"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/session"
	workerfile "github.com/airlock-dev/airlock/worker"
)

// sandboxes are the sessions of airlock serve --http: every MCP client
// session that opens with the server's token gets a sandbox of its own (a
// durable session, unless --ephemeral), with a token of its own that opens
// it again after a reconnect, also after the server restarted. They share
// the server's gate, ledger and broker.
//
// Routing needs no table: each sandbox's MCP server hands out MCP session
// ids prefixed with the sandbox's id ("ID.random"), so a request's
// Mcp-Session-Id names its sandbox, and the request's token must be the
// server's or that sandbox's. The SDK then checks, by the user id this
// handler gives it (the sandbox's id), that the MCP session is that
// sandbox's.
type sandboxes struct {
	w          *workerfile.Worker
	workerFile string
	opts       session.Options // without State
	root       string          // the sessions directory; "" keeps sandboxes in memory only
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

	mu       sync.Mutex
	live     map[string]*sandboxSess
	starting int                      // sandboxes being made: their slots are taken
	opening  map[string]chan struct{} // saved sessions being resumed, closed when done
	closed   bool
}

// sandbox is one live session of the HTTP server.
type sandboxSess struct {
	id   string
	hash [32]byte // of its token
	sess *session.Session
	srv  *mcp.Server
	// guarded by sandboxes.mu
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

func newSandboxes(w *workerfile.Worker, workerFile string, opts session.Options, root, version, token string,
	maxLive int, maxBytes int64, idle time.Duration, stderr io.Writer) *sandboxes {
	h := &sandboxes{w: w, workerFile: workerFile, opts: opts, root: root, version: version, server: hashToken(token),
		maxLive: maxLive, maxBytes: maxBytes, idle: idle, stderr: stderr, live: map[string]*sandboxSess{}, lim: messageLimits(w)}
	sdk := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if sb, ok := r.Context().Value(sandboxKey{}).(*sandboxSess); ok {
			return sb.srv
		}
		return nil
	}, &mcp.StreamableHTTPOptions{
		// The guard has bounded the body already: the SDK's own 4 MiB
		// would refuse legal writes.
		MaxRequestBodyBytes: int64(sdkLineLength(h.lim))})
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
	h.front = &sandboxSess{id: "front", srv: mcp.NewServer(&mcp.Implementation{Name: "airlock", Title: "airlock sandbox", Version: version},
		&mcp.ServerOptions{Instructions: "airlock gives every client a sandbox of its own once it initializes."})}
	return h
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

func (h *sandboxes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
		http.Error(w, "airlock: missing bearer token: send the header \"Authorization: Bearer TOKEN\" with the token airlock serve printed at start (also in its token file), or a session's own token", http.StatusUnauthorized)
		return
	}
	pathID := strings.Trim(strings.TrimPrefix(r.URL.Path, mcpPath), "/")
	if !h.knownToken(r, hashToken(token), pathID) {
		// Before the body is read: a stranger costs nothing.
		w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
		http.Error(w, "airlock: wrong bearer token: send the token airlock serve printed at start (also in its token file), or a session's own token", http.StatusUnauthorized)
		return
	}
	method := ""
	if r.Method == http.MethodPost {
		// Bounded before anything decodes it, as over stdio.
		body, err := rpcguard.ReadBody(io.LimitReader(r.Body, h.lim.MaxBytes+1), h.lim)
		if err != nil {
			http.Error(w, "airlock: "+err.Error(), http.StatusBadRequest)
			return
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
			return
		}
		r.Body = io.NopCloser(body.Reader())
		method = body.Method
	}
	sb, created, err := h.pick(r, token, pathID, method == "initialize")
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

// pick finds the sandbox a request is for, marked active: by its MCP
// session id, or for a new MCP session the one its path names (resumed with
// its own token) or a new one (with the server's token). created is the new
// sandbox's token.
func (h *sandboxes) pick(r *http.Request, token, pathID string, initialize bool) (sb *sandboxSess, created string, err error) {
	hash := hashToken(token)
	isServer := subtle.ConstantTimeCompare(hash[:], h.server[:]) == 1
	if mcpID := r.Header.Get("Mcp-Session-Id"); mcpID != "" {
		id, _, _ := strings.Cut(mcpID, ".")
		if pathID != "" && pathID != id {
			return nil, "", fail(http.StatusBadRequest, "the MCP session %s is not of session %s, which the path names", mcpID, pathID)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		sb := h.live[id]
		if sb == nil {
			return nil, "", fail(http.StatusNotFound, "session %s is not open in this server (it was unloaded to make room, or the server restarted): "+
				"start a new MCP session at %s/%s with that session's token to resume it", id, h.base, id)
		}
		if !isServer && subtle.ConstantTimeCompare(hash[:], sb.hash[:]) != 1 {
			return nil, "", fail(http.StatusForbidden, "this token does not open session %s: send the server's token or that session's own", id)
		}
		h.activeLocked(sb)
		return sb, "", nil
	}
	if r.Method != http.MethodPost {
		return nil, "", fail(http.StatusBadRequest, "%s needs an Mcp-Session-Id header; a new MCP session starts with a POST of initialize", r.Method)
	}
	if !initialize {
		// Outside a session (server/discover, ping): the front server
		// answers, and no sandbox is made; a session's token is good for
		// its own path only.
		if !isServer && (pathID == "" || !h.tokenOpens(pathID, hash)) {
			return nil, "", fail(http.StatusForbidden, "this token does not open %s: send the server's token, or a session's own at that session's path", r.URL.Path)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.activeLocked(h.front)
		return h.front, "", nil
	}
	if pathID != "" {
		sb, err := h.resume(pathID, hash)
		return sb, "", err
	}
	if !isServer {
		return nil, "", fail(http.StatusUnauthorized, "wrong bearer token: a new session needs the token airlock serve printed at start (also in its token file); "+
			"a session's own token opens that session at %s/SESSION-ID", h.base)
	}
	return h.create()
}

func (h *sandboxes) activeLocked(sb *sandboxSess) { sb.active++ }

func (h *sandboxes) release(sb *sandboxSess) {
	h.mu.Lock()
	sb.active--
	sb.last = time.Now()
	h.mu.Unlock()
}

// knownToken reports whether hash is a token this server gave out and
// that could open what the request names: the server's, a live session's,
// or that of the saved session its path or MCP session id names. Any
// other token gets 401 on every path.
func (h *sandboxes) knownToken(r *http.Request, hash [32]byte, pathID string) bool {
	if subtle.ConstantTimeCompare(hash[:], h.server[:]) == 1 {
		return true
	}
	h.mu.Lock()
	for _, sb := range h.live {
		if subtle.ConstantTimeCompare(hash[:], sb.hash[:]) == 1 {
			h.mu.Unlock()
			return true
		}
	}
	h.mu.Unlock()
	mcpID, _, _ := strings.Cut(r.Header.Get("Mcp-Session-Id"), ".")
	for _, id := range []string{pathID, mcpID} {
		if id != "" && h.tokenOpens(id, hash) {
			return true
		}
	}
	return false
}

// tokenOpens reports whether hash is the token of session id, live or
// saved.
func (h *sandboxes) tokenOpens(id string, hash [32]byte) bool {
	h.mu.Lock()
	sb := h.live[id]
	h.mu.Unlock()
	if sb != nil {
		return subtle.ConstantTimeCompare(hash[:], sb.hash[:]) == 1
	}
	if h.root == "" {
		return false
	}
	meta, err := session.ReadMeta(h.root, id)
	if err != nil || meta.Transport != "http" {
		return false
	}
	want, _ := hex.DecodeString(meta.TokenHash)
	return subtle.ConstantTimeCompare(want, hash[:]) == 1
}

// errFull: no room for another sandbox.
func (h *sandboxes) fullLocked() error {
	var held int64
	for _, sb := range h.live {
		held += sandboxBytes(sb)
	}
	return fail(http.StatusServiceUnavailable, "this server is full: %d sessions (at most %d, --max-sessions) hold %s (at most %s, --max-memory), and none has been idle for %s "+
		"with nothing in flight: close another client, or start airlock serve with a higher --max-sessions or --max-memory",
		len(h.live)+h.starting, h.maxLive, bytesize.Format(held), bytesize.Format(h.maxBytes), h.idle)
}

func sandboxBytes(sb *sandboxSess) int64 {
	held := sb.sess.Held()
	return held.StoreBytes + held.Workspace
}

// makeRoomLocked unloads idle sandboxes, least recently used first, until
// one more fits; a durable sandbox unloaded stays on disk and resumes on
// its token. It fails when none can go.
func (h *sandboxes) makeRoomLocked() error {
	for {
		var held int64
		for _, sb := range h.live {
			held += sandboxBytes(sb)
		}
		if len(h.live)+h.starting < h.maxLive && held < h.maxBytes {
			return nil
		}
		var victim *sandboxSess
		for _, sb := range h.live {
			_, durable := sb.sess.Durable()
			if sb.active > 0 || !durable || time.Since(sb.last) < h.idle || sb.sess.Busy() {
				continue
			}
			if victim == nil || sb.last.Before(victim.last) {
				victim = sb
			}
		}
		if victim == nil {
			return h.fullLocked()
		}
		delete(h.live, victim.id)
		victim.sess.Close()
		fmt.Fprintf(h.stderr, "airlock serve: unloaded session %s (idle since %s) to make room; it resumes on its token\n",
			victim.id, victim.last.Format(time.TimeOnly))
	}
}

// create makes a new sandbox.
func (h *sandboxes) create() (*sandboxSess, string, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, "", fail(http.StatusServiceUnavailable, "the server is stopping")
	}
	if err := h.makeRoomLocked(); err != nil {
		h.mu.Unlock()
		return nil, "", err
	}
	h.starting++
	h.mu.Unlock()
	sb, token, err := h.open()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.starting--
	if err != nil {
		return nil, "", err
	}
	h.live[sb.id] = sb
	h.activeLocked(sb)
	return sb, token, nil
}

func (h *sandboxes) open() (*sandboxSess, string, error) {
	var b [32]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	hash := hashToken(token)
	opts := h.opts
	var sess *session.Session
	var err error
	if h.root == "" {
		sess, err = session.New(context.Background(), h.w, opts)
	} else {
		key, file := workerKey(h.w, h.workerFile)
		bind := h.bind
		dir, derr := session.CreateStateDir(h.root, session.Meta{Worker: h.w.Name, WorkerKey: key, WorkerFile: file,
			Transport: "http", TokenHash: hex.EncodeToString(hash[:]), Binding: &bind})
		if derr != nil {
			return nil, "", derr
		}
		opts.State = dir
		if sess, err = session.New(context.Background(), h.w, opts); err != nil {
			dir.Unlock()
			os.RemoveAll(dir.Path)
		}
	}
	if err != nil {
		return nil, "", err
	}
	sb := h.wrap(sess, hash, token)
	fmt.Fprintf(h.stderr, "airlock serve: session %s opened for a new client\n", sb.id)
	return sb, token, nil
}

// resume opens the sandbox id for a new MCP session of a client that has
// its token: the live one, or the saved one resumed (without the
// registry's lock: a large session takes a while, and other clients go
// on meanwhile; a second client of the same session waits for the first).
func (h *sandboxes) resume(id string, hash [32]byte) (*sandboxSess, error) {
	h.mu.Lock()
	for h.opening[id] != nil {
		ch := h.opening[id]
		h.mu.Unlock()
		<-ch
		h.mu.Lock()
	}
	if sb := h.live[id]; sb != nil {
		defer h.mu.Unlock()
		if subtle.ConstantTimeCompare(hash[:], sb.hash[:]) != 1 {
			return nil, fail(http.StatusForbidden, "this token does not open session %s: use the Airlock-Session-Token the server gave when the session was made", id)
		}
		h.activeLocked(sb)
		return sb, nil
	}
	if h.root == "" {
		h.mu.Unlock()
		return nil, fail(http.StatusNotFound, "no session %s in this server (its sessions are in memory only, --ephemeral): start a new one at %s", id, h.base)
	}
	if err := h.makeRoomLocked(); err != nil {
		h.mu.Unlock()
		return nil, err
	}
	ch := make(chan struct{})
	if h.opening == nil {
		h.opening = map[string]chan struct{}{}
	}
	h.opening[id] = ch
	h.starting++
	h.mu.Unlock()
	sb, err := h.resumeSaved(id, hash)
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.opening, id)
	close(ch)
	h.starting--
	if err != nil {
		return nil, err
	}
	h.live[id] = sb
	h.activeLocked(sb)
	return sb, nil
}

// resumeSaved resumes the saved session id, if hash is its token's.
func (h *sandboxes) resumeSaved(id string, hash [32]byte) (*sandboxSess, error) {
	dir, err := session.OpenStateDir(h.root, id)
	switch {
	case errors.Is(err, session.ErrNoSession) || errors.Is(err, os.ErrNotExist):
		return nil, fail(http.StatusNotFound, "no session %s here (see airlock sessions list): start a new one at %s", id, h.base)
	case errors.Is(err, session.ErrSessionBusy):
		return nil, fail(http.StatusConflict, "session %s is open in another airlock serve", id)
	case err != nil:
		return nil, err
	}
	want, _ := hex.DecodeString(dir.Meta.TokenHash)
	if dir.Meta.Transport != "http" || subtle.ConstantTimeCompare(want, hash[:]) != 1 {
		dir.Unlock()
		return nil, fail(http.StatusForbidden, "this token does not open session %s", id)
	}
	// The token opens the session, never a wider policy than its own: a
	// session of another worker, or of other flags, stays theirs.
	key, _ := workerKey(h.w, h.workerFile)
	if err := dir.Claim(key, h.bind); err != nil {
		dir.Unlock()
		var be *session.BindingError
		if errors.As(err, &be) {
			fmt.Fprintf(h.stderr, "airlock serve: refused to resume session %s for a client: %s\n", id, termsafe.Line(err.Error()))
			return nil, fail(http.StatusForbidden, "%s", err.Error())
		}
		return nil, err
	}
	opts := h.opts
	opts.State = dir
	sess, rec, err := session.Resume(context.Background(), h.w, opts)
	if err != nil {
		dir.Unlock()
		return nil, fail(http.StatusInternalServerError, "session %s could not be resumed: %v; see it with airlock sessions show %s", id, err, id)
	}
	fmt.Fprintf(h.stderr, "airlock serve: resumed session %s for a returning client: %d file(s) changed, %d staged commit(s)\n",
		id, len(rec.Changed), len(rec.Staged))
	for _, e := range rec.Ended {
		fmt.Fprintf(h.stderr, "airlock serve: %s\n", termsafe.Line(e))
	}
	return h.wrap(sess, hash, ""), nil
}

// wrap serves sess over MCP, its MCP session ids naming it.
func (h *sandboxes) wrap(sess *session.Session, hash [32]byte, token string) *sandboxSess {
	sb := &sandboxSess{id: sess.ID(), hash: hash, sess: sess, last: time.Now()}
	more := fmt.Sprintf("This is session %s of an airlock server shared by several clients; your files are yours alone.", sb.id)
	if token != "" {
		more += fmt.Sprintf(" To come back to it after a disconnect, open a new MCP session at %s/%s with the header \"Authorization: Bearer %s\".", h.base, sb.id, token)
	}
	sb.srv = gittools.NewMCPServerWith(sess, h.version, more, func() string {
		var b [16]byte
		rand.Read(b[:])
		return sb.id + "." + hex.EncodeToString(b[:])
	})
	return sb
}

// Close closes every sandbox (durable ones are saved) and says how many.
func (h *sandboxes) Close() {
	h.mu.Lock()
	h.closed = true
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
		if h.root != "" {
			what = "saved"
		}
		fmt.Fprintf(h.stderr, "airlock serve: %s %d session(s): %s\n", what, len(ids), strings.Join(ids, ", "))
	}
}
