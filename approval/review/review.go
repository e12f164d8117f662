package review

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// canceler is a Terminal whose read can be interrupted (the TTY's can).
type canceler interface {
	Cancel()
	Reset()
}

// Review shows open requests on t and sends each decision to its server,
// until ctx ends; with once, it stops after one decision. With one request
// open, it is shown at once; with more, a list of them all (grouped by
// server, session and repository) asks which to take, and after each
// decision the list comes back. A request that goes away while it or the
// list is shown is taken off the screen, if t can cancel a read (the TTY
// can).
func Review(ctx context.Context, r *broker.Reviewer, t Terminal, once bool) error {
	c, _ := t.(canceler)
	l := newList()
	settle(ctx, r)
	for {
		pending := r.Pending()
		if len(pending) == 0 {
			if len(r.Servers()) == 0 {
				fmt.Fprintf(t, "Waiting for push requests (no airlock server is running yet)...\n")
			}
			if _, err := r.Next(ctx); err != nil {
				return err
			}
			settle(ctx, r)
			continue
		}
		in := pending[0]
		if len(pending) > 1 {
			var err error
			if in, err = l.choose(ctx, r, t, c); err != nil {
				return err
			}
			if in == nil {
				continue // fewer than two left: the one is shown directly
			}
		}
		decided, err := decideOne(ctx, t, c, in, len(pending) > 1)
		if err != nil {
			return err
		}
		if once && decided {
			return nil
		}
	}
}

// settle waits until the servers' requests stop coming in (nothing new
// for a moment; a second at most): a reviewer that has just connected, or
// a server that has just started, gets its requests one message at a time,
// and the list is best drawn, and numbered, with all of them.
func settle(ctx context.Context, r *broker.Reviewer) {
	limit := time.NewTimer(time.Second)
	defer limit.Stop()
	for {
		select {
		case <-r.Changed():
		case <-time.After(150 * time.Millisecond):
			return
		case <-limit.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// decideOne shows in's prompt and sends the decision to its server. It
// reports whether a decision was recorded; a request that goes away while
// shown, or the reviewer's going back to the list (offered when listed),
// is not an error.
func decideOne(ctx context.Context, t Terminal, c canceler, in *broker.Incoming, listed bool) (bool, error) {
	fmt.Fprintf(t, "\n%s\n", header(in))
	type result struct {
		d   approval.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := prompt(t, in.Request, listed)
		done <- result{d, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-in.Gone():
		if c != nil {
			c.Cancel()
		}
		<-done
		if c != nil {
			c.Reset()
		}
		fmt.Fprintf(t, "\nThis request is gone: %s.\n", in.Why())
		return false, nil
	case <-ctx.Done():
		if c != nil {
			c.Cancel()
		}
		<-done
		return false, ctx.Err()
	}
	if res.err != nil {
		if errors.Is(res.err, ErrCanceled) || errors.Is(res.err, errBack) {
			return false, nil
		}
		return false, res.err
	}
	d, err := in.Decide(res.d)
	switch {
	case err != nil:
		fmt.Fprintf(t, "  Not recorded: %v\n", err)
	case d.Verdict == approval.Reject:
		fmt.Fprintf(t, "  Rejected; the worker is told%s.\n", reasonSuffix(d.Reason))
	case d.Verdict == approval.Pick:
		fmt.Fprintf(t, "  Approved %d picked files as commit %s; the push goes ahead.\n", len(d.Paths), shortid.HashOr(d.New, "(none)"))
	case in.Request.Kind == approval.KindNetwork:
		fmt.Fprintf(t, "  Allowed; the run goes ahead with the network.\n")
	default:
		fmt.Fprintf(t, "  Approved; the push goes ahead.\n")
	}
	return err == nil, nil
}

// header names a request above its prompt: its id, worker, server, and
// the session and repository when the server named them.
func header(in *broker.Incoming) string {
	r := in.Request
	h := fmt.Sprintf("Request %s from worker %s (server pid %d)", termsafe.Line(r.ID), quoted(r.Worker), in.Server.PID)
	if r.Session != "" {
		h += ", session " + quoted(r.Session)
	}
	if r.Repo != "" {
		h += ", repository " + quoted(r.Repo)
	}
	return h + ":"
}

// quoted is a worker's or a repository's string, safe and in quotes.
func quoted(s string) string { return `"` + termsafe.Line(s) + `"` }

func reasonSuffix(r string) string {
	if strings.TrimSpace(r) == "" {
		return ""
	}
	return fmt.Sprintf(" why: %q", r)
}
