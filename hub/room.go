package hub

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/airlock-dev/airlock/internal/bytesize"
)

// heldLocked is what the live sandboxes hold together.
func (h *Hub) heldLocked() int64 {
	var held int64
	for _, sb := range h.live {
		held += sandboxBytes(sb)
	}
	return held
}

func sandboxBytes(sb *sandboxSess) int64 {
	held := sb.sess.Held()
	return held.StoreBytes + held.Workspace
}

// fullLocked: no room for another sandbox.
func (h *Hub) fullLocked() error {
	return fail(http.StatusServiceUnavailable, "this server is full: %d sessions (at most %d, --max-sessions) hold %s (at most %s, --max-memory), and none has been idle for %s "+
		"with nothing in flight: close another client, or start airlock serve with a higher --max-sessions or --max-memory",
		len(h.live)+h.starting, h.maxLive, bytesize.Format(h.heldLocked()), bytesize.Format(h.maxBytes), h.idle)
}

// makeRoomLocked unloads idle sandboxes, least recently used first, until
// one more fits; a durable sandbox unloaded stays on disk and resumes on
// its token. It fails when none can go. Called with h.mu held, and
// returns with it held, room for one more; it lets go of h.mu while it
// asks a sandbox whether it is busy and while it closes one (each takes
// the session's own lock), marking that sandbox as opening meanwhile so
// that its requests wait.
func (h *Hub) makeRoomLocked() error {
	busy := map[*sandboxSess]bool{} // found busy by this call: not asked again
	for {
		if len(h.live)+h.starting < h.maxLive && h.heldLocked() < h.maxBytes {
			return nil
		}
		victim, ch := h.idlestLocked(busy)
		if victim == nil {
			return h.fullLocked()
		}
		last := victim.last
		h.mu.Unlock()
		isBusy := h.busy(victim.sess)
		if !isBusy {
			victim.sess.Close()
			fmt.Fprintf(h.stderr, "airlock serve: unloaded session %s (idle since %s) to make room; it resumes on its token\n",
				victim.id, last.Format(time.TimeOnly))
		}
		h.mu.Lock()
		if isBusy {
			busy[victim] = true
		} else if h.live[victim.id] == victim {
			delete(h.live, victim.id)
		}
		delete(h.opening, victim.id)
		close(ch)
	}
}

// idlestLocked picks the sandbox to unload: durable, no request in
// flight, idle long enough, not found busy by this call, the least
// recently used; it
// is marked as opening (its requests wait) until the caller closes ch.
func (h *Hub) idlestLocked(busy map[*sandboxSess]bool) (*sandboxSess, chan struct{}) {
	var idle []*sandboxSess
	for id, sb := range h.live {
		_, durable := sb.sess.Durable()
		if sb.active > 0 || !durable || time.Since(sb.last) < h.idle || busy[sb] || h.opening[id] != nil {
			continue
		}
		idle = append(idle, sb)
	}
	if len(idle) == 0 {
		return nil, nil
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].last.Before(idle[j].last) })
	ch := make(chan struct{})
	h.opening[idle[0].id] = ch
	return idle[0], ch
}
