package hub

import (
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// grant is what a request's token opens: checked once, before the body is
// read, and used by pick without checking again.
type grant struct {
	server  bool     // the server's token: a new session, or any session
	session string   // otherwise the session (live or saved) whose own token it is
	hash    [32]byte // the token's
}

// opens reports whether the grant opens session id.
func (g grant) opens(id string) bool { return g.server || (id != "" && g.session == id) }

// authorize finds what hash, a request's token, opens: the server's
// token, a live session's (in memory: every live session is looked at
// before any disk is read), or that of the saved session the request's
// path or MCP session id names (its meta.json). Any other token is
// unknown, and gets 401 on every path.
func (h *Hub) authorize(r *http.Request, hash [32]byte, pathID string) (grant, bool) {
	if subtle.ConstantTimeCompare(hash[:], h.server[:]) == 1 {
		return grant{server: true, hash: hash}, true
	}
	h.mu.Lock()
	for id, sb := range h.live {
		if subtle.ConstantTimeCompare(hash[:], sb.hash[:]) == 1 {
			h.mu.Unlock()
			return grant{session: id, hash: hash}, true
		}
	}
	h.mu.Unlock()
	mcpID, _, _ := strings.Cut(r.Header.Get("Mcp-Session-Id"), ".")
	for _, id := range []string{pathID, mcpID} {
		if id != "" && h.savedTokenOpens(id, hash) {
			return grant{session: id, hash: hash}, true
		}
	}
	return grant{}, false
}

// savedTokenOpens reports whether hash is the token saved session id
// recorded (not one that is live: authorize looked at those).
func (h *Hub) savedTokenOpens(id string, hash [32]byte) bool {
	if h.store == nil {
		return false
	}
	h.mu.Lock()
	_, live := h.live[id]
	h.mu.Unlock()
	if live {
		return false
	}
	meta, err := h.store.ReadMeta(id)
	if err != nil || meta.Transport != "http" {
		return false
	}
	want, _ := hex.DecodeString(meta.TokenHash)
	return subtle.ConstantTimeCompare(want, hash[:]) == 1
}

// pick finds the sandbox a request is for, marked active: by its MCP
// session id, or for a new MCP session the one its path names (resumed with
// its own token) or a new one (with the server's token). created is the new
// sandbox's token.
func (h *Hub) pick(r *http.Request, g grant, pathID string, initialize bool) (sb *sandboxSess, created string, err error) {
	if mcpID := r.Header.Get("Mcp-Session-Id"); mcpID != "" {
		id, _, _ := strings.Cut(mcpID, ".")
		if pathID != "" && pathID != id {
			return nil, "", fail(http.StatusBadRequest, "the MCP session %s is not of session %s, which the path names", mcpID, pathID)
		}
		h.mu.Lock()
		h.waitLocked(id)
		sb := h.live[id]
		if sb == nil && h.fleet != nil && g.opens(id) {
			h.mu.Unlock() // the fleet's store is asked without the hub's lock
			if err := h.fleet.heldElsewhere(id); err != nil {
				return nil, "", err
			}
			h.mu.Lock()
			h.waitLocked(id)
			sb = h.live[id]
		}
		defer h.mu.Unlock()
		if sb == nil {
			return nil, "", fail(http.StatusNotFound, "session %s is not open in this server (it was unloaded to make room, or the server restarted): "+
				"start a new MCP session at %s/%s with that session's token to resume it", id, h.base, id)
		}
		if !g.opens(id) {
			return nil, "", fail(http.StatusForbidden, "this token does not open session %s: send the server's token or that session's own", id)
		}
		sb.active++
		return sb, "", nil
	}
	if r.Method != http.MethodPost {
		return nil, "", fail(http.StatusBadRequest, "%s needs an Mcp-Session-Id header; a new MCP session starts with a POST of initialize", r.Method)
	}
	if !initialize {
		// Outside a session (server/discover, ping): the front server
		// answers, and no sandbox is made; a session's token is good for
		// its own path only.
		if !g.opens(pathID) {
			return nil, "", fail(http.StatusForbidden, "this token does not open %s: send the server's token, or a session's own at that session's path", r.URL.Path)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.front.active++
		return h.front, "", nil
	}
	if pathID != "" {
		sb, err := h.resume(pathID, g)
		return sb, "", err
	}
	if !g.server {
		return nil, "", fail(http.StatusUnauthorized, "wrong bearer token: a new session needs the token airlock serve printed at start (also in its token file); "+
			"a session's own token opens that session at %s/SESSION-ID", h.base)
	}
	return h.create()
}

// waitLocked waits, h.mu held, until session id is neither being resumed
// nor unloaded.
func (h *Hub) waitLocked(id string) {
	for h.opening[id] != nil {
		ch := h.opening[id]
		h.mu.Unlock()
		<-ch
		h.mu.Lock()
	}
}

func (h *Hub) release(sb *sandboxSess) {
	h.mu.Lock()
	sb.active--
	sb.last = time.Now()
	h.released.Broadcast()
	h.mu.Unlock()
}
