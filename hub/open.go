package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/store"
)

// create makes a new sandbox.
func (h *Hub) create() (*sandboxSess, string, error) {
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
	sb.active++
	return sb, token, nil
}

func (h *Hub) open() (*sandboxSess, string, error) {
	var b [32]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	hash := hashToken(token)
	opts := h.opts
	var sess *session.Session
	var err error
	if h.store == nil {
		sess, err = session.New(context.Background(), h.w, opts)
	} else {
		bind := h.bind
		dir, derr := h.store.Create(session.Meta{Worker: h.w.Name, WorkerKey: h.workerKey, WorkerFile: h.workerFile,
			Transport: "http", TokenHash: hex.EncodeToString(hash[:]), Binding: &bind})
		if derr != nil {
			return nil, "", derr
		}
		opts.State = dir
		if sess, err = session.New(context.Background(), h.w, opts); err != nil {
			_ = dir.Remove() // it never held anything; a sweep removes what is left
			dir.Unlock()
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
func (h *Hub) resume(id string, g grant) (*sandboxSess, error) {
	h.mu.Lock()
	for {
		h.waitLocked(id)
		if sb := h.live[id]; sb != nil {
			defer h.mu.Unlock()
			if g.session != id {
				return nil, fail(http.StatusForbidden, "this token does not open session %s: use the Airlock-Session-Token the server gave when the session was made", id)
			}
			sb.active++
			return sb, nil
		}
		if h.store == nil {
			h.mu.Unlock()
			return nil, fail(http.StatusNotFound, "no session %s in this server (its sessions are in memory only, --ephemeral): start a new one at %s", id, h.base)
		}
		if err := h.makeRoomLocked(); err != nil {
			h.mu.Unlock()
			return nil, err
		}
		// makeRoomLocked let go of the lock: another client of id may
		// have begun resuming it meanwhile.
		if h.opening[id] == nil && h.live[id] == nil {
			break
		}
	}
	ch := make(chan struct{})
	h.opening[id] = ch
	h.starting++
	h.mu.Unlock()
	sb, err := h.resumeSaved(id, g)
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.opening, id)
	close(ch)
	h.starting--
	if err != nil {
		return nil, err
	}
	h.live[id] = sb
	sb.active++
	return sb, nil
}

// resumeSaved resumes the saved session id, if the grant is its own.
func (h *Hub) resumeSaved(id string, g grant) (*sandboxSess, error) {
	dir, err := h.openSaved(id)
	switch {
	case errors.Is(err, session.ErrNoSession) || errors.Is(err, os.ErrNotExist):
		return nil, fail(http.StatusNotFound, "no session %s here (see airlock sessions list): start a new one at %s", id, h.base)
	case errors.Is(err, session.ErrSessionBusy) && h.fleet != nil && g.session == id:
		if away := h.fleet.heldElsewhere(id); away != nil {
			return nil, away
		}
		return nil, fail(http.StatusServiceUnavailable, "session %s was let go by another airlock serve a moment ago: try again", id)
	case errors.Is(err, session.ErrSessionBusy):
		return nil, fail(http.StatusConflict, "session %s is open in another airlock serve", id)
	case err != nil:
		return nil, err
	}
	// authorize found the token in this session's meta.
	if dir.Info().Transport != "http" || g.session != id {
		dir.Unlock()
		return nil, fail(http.StatusForbidden, "this token does not open session %s", id)
	}
	// The token opens the session, never a wider policy than its own: a
	// session of another worker, or of other flags, stays theirs.
	if err := store.Claim(dir, h.workerKey, h.bind); err != nil {
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
	return h.wrap(sess, g.hash, ""), nil
}

// wrap serves sess over MCP, its MCP session ids naming it.
func (h *Hub) wrap(sess *session.Session, hash [32]byte, token string) *sandboxSess {
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
