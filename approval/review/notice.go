package review

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// A request that arrives while the reviewer reads another is announced
// without taking the screen: at the line prompt, a line of its own under
// the keys when the prompt waits for a key, or after the line being typed
// (never in the middle of it); in the full-screen view, in its status row
// (the view redraws it at once). The request shown stays; l lists them.

// announcer is a terminal that can announce (the TTY).
type announcer interface {
	Announce(line, short string)
	// Noticed is the last announcement, for the full-screen view's
	// status row ("" once the reviewer moves to another request).
	Noticed() string
	ClearNotice()
}

// announceNew watches r while in is shown and announces each request that
// arrives meanwhile, until stop. It takes r's Changed signals: the review
// loop reads Pending again after the request is decided.
func announceNew(ctx context.Context, r *broker.Reviewer, t Terminal, in *broker.Incoming) (stop func()) {
	a, ok := t.(announcer)
	if !ok || r == nil {
		return func() {}
	}
	a.ClearNotice()
	known := map[*broker.Incoming]bool{}
	for _, p := range r.Pending() {
		known[p] = true
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-r.Changed():
			case <-done:
				return
			case <-ctx.Done():
				return
			}
			for _, p := range r.Pending() {
				if known[p] || p == in {
					continue
				}
				known[p] = true
				others := len(r.Pending()) - 1
				a.Announce(noticeOf(p, others), shortNoticeOf(p, others))
			}
		}
	}()
	return func() {
		close(done)
		<-exited
		a.ClearNotice()
	}
}

// shortNoticeOf is noticeOf for the full-screen view's status row, which
// keeps room for the view's own keys.
func shortNoticeOf(p *broker.Incoming, others int) string {
	return fmt.Sprintf("[new: %s, %d waiting]", termsafe.Line(p.Request.ID), others)
}

// noticeOf is the announcement of p, one of others waiting besides the
// request shown.
func noticeOf(p *broker.Incoming, others int) string {
	return fmt.Sprintf("New: request %s from worker %s is waiting (%d in all besides this one; l lists them)",
		termsafe.Line(p.Request.ID), quoted(p.Request.Worker), others)
}
