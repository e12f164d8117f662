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
	seen := approvals{}
	toList := false // the reviewer pressed l: the list, even of one
	settle(ctx, r)
	for {
		pending := r.Pending()
		if len(pending) == 0 {
			toList = false
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
		if len(pending) > 1 || toList {
			var err error
			in, err = l.choose(ctx, r, t, c, toList)
			toList = false
			if err != nil {
				return err
			}
			if in == nil {
				continue // fewer than two left: the one is shown directly
			}
		}
		stop := announceNew(ctx, r, t, in)
		decided, err := decideOne(ctx, t, c, in, seen)
		stop()
		if errors.Is(err, errBack) {
			toList = true
			continue
		}
		if err != nil {
			return err
		}
		if once && decided {
			return nil
		}
	}
}

// approvals are the pushes this reviewer approved, by target and ref, with
// when: a request asked before one of them was approved is told that its
// branch has moved since.
type approvals map[[2]string]time.Time

func (a approvals) add(r *approval.Request) { a[[2]string{r.Target, r.Ref}] = time.Now() }

func (a approvals) moved(r *approval.Request) bool {
	at, ok := a[[2]string{r.Target, r.Ref}]
	return ok && at.After(r.Time)
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
// shown is not an error, and errBack says the reviewer went back to the
// list (l, from any of the prompt's questions).
func decideOne(ctx context.Context, t Terminal, c canceler, in *broker.Incoming, seen approvals) (bool, error) {
	h := header(in, sizeOf(t).cols)
	fmt.Fprintf(t, "\n%s\n", h)
	type result struct {
		d   approval.Decision
		err error
	}
	done := make(chan result, 1)
	opt := options{back: true, moved: in.Request.Kind != approval.KindNetwork && seen.moved(in.Request),
		header: 1 + screenRows(h, sizeOf(t).cols)}
	go func() {
		d, err := prompt(t, in.Request, opt)
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
		if errors.Is(res.err, ErrCanceled) {
			return false, nil
		}
		return false, res.err
	}
	res.d.Undoable = undoable(in, c, res.d)
	d, err := in.Decide(res.d)
	if errors.Is(err, broker.ErrQueued) {
		// A fleet's queue keeps it for the server that offers the
		// request again: decided, as far as this reviewer goes.
		fmt.Fprintf(t, "  Queued: %s\n", termsafe.Line(err.Error()))
		return true, nil
	}
	if err != nil {
		// The server's words, from its socket or a fleet's outcomes
		// bucket (which anyone may write to a NATS without users).
		fmt.Fprintf(t, "  Not recorded: %s\n", termsafe.Line(err.Error()))
		return false, nil
	}
	if d.Approved() && in.Request.Kind != approval.KindNetwork {
		seen.add(in.Request)
	}
	fmt.Fprintln(t, outcome(in.Request, d))
	offerUndo(ctx, t, c, in, d)
	return true, nil
}

// outcome is the line that says what the decision did: for a network
// request, allowed or denied; for a push, what goes ahead and what the
// worker is told.
func outcome(r *approval.Request, d approval.Decision) string {
	var gets string // the comments, when there are any
	if n := len(d.Comments); n > 0 {
		gets = ", and the worker gets your " + plural(n, "comment")
	}
	switch {
	case r.Kind == approval.KindNetwork && d.Verdict == approval.Reject:
		return fmt.Sprintf("  Denied; the command runs without the network, and the worker is told%s.", reasonSuffix(d.Reason))
	case r.Kind == approval.KindNetwork:
		return "  Allowed; the run goes ahead with the network."
	case d.Verdict == approval.Reject && gets != "":
		why := ""
		if strings.TrimSpace(d.Reason) != "" {
			why = fmt.Sprintf(" and your reason, %q", d.Reason)
		}
		return fmt.Sprintf("  Asked for changes; nothing is pushed%s%s.", gets, why)
	case d.Verdict == approval.Reject:
		return fmt.Sprintf("  Rejected; the worker is told%s.", reasonSuffix(d.Reason))
	case d.Verdict == approval.Pick && len(d.Accept) > 0:
		n := len(d.Commits)
		if n == 0 {
			n = len(d.Accept)
		}
		return fmt.Sprintf("  Approved the hunks you picked, as %s ending in %s; the push goes ahead%s.", plural(n, "commit"), shortid.HashOr(d.New, "(none)"), gets)
	case d.Verdict == approval.Pick:
		return fmt.Sprintf("  Approved %d picked files as commit %s; the push goes ahead%s.", len(d.Paths), shortid.HashOr(d.New, "(none)"), gets)
	}
	return fmt.Sprintf("  Approved; the push goes ahead%s.", gets)
}

// header names a request above its prompt: its id, worker, server, the
// session and repository when the server named them, and, for a request
// asked again, why. It is broken between its parts to fit the terminal's
// cols (80 at the least).
func header(in *broker.Incoming, cols int) string {
	r := in.Request
	parts := []string{fmt.Sprintf("Request %s from worker %s", termsafe.Line(r.ID), quoted(r.Worker)),
		fmt.Sprintf("(server pid %d%s)", in.Server.PID, onHost(in.Server))}
	if r.Session != "" {
		parts[len(parts)-1] += ","
		parts = append(parts, "session "+quoted(r.Session))
	}
	if r.Repo != "" {
		parts[len(parts)-1] += ","
		parts = append(parts, "repository "+quoted(r.Repo))
	}
	if why := askedAgain(r); why != "" {
		parts[len(parts)-1] += ";"
		parts = append(parts, why)
	}
	parts[len(parts)-1] += ":"
	return wrapParts(parts, " ", "  ", cols-2)
}

// askedAgain is, for a request that follows one the reviewer saw,
// "asked again: " and why; "" for a first request.
func askedAgain(r *approval.Request) string {
	if r.Since == nil {
		return ""
	}
	why := strings.TrimSpace(r.Since.Why)
	if why == "" {
		why = "you saw it"
	}
	return "asked again: " + termsafe.Line(why)
}

// onHost is " on HOST" for a server of a fleet's queue (its host is
// the server's word, so quoted), "" for one on this machine's socket.
func onHost(s broker.ServerInfo) string {
	if s.Host == "" {
		return ""
	}
	return " on " + quoted(s.Host)
}

// quoted is a worker's or a repository's string, safe and in quotes.
func quoted(s string) string { return `"` + termsafe.Line(s) + `"` }

func reasonSuffix(r string) string {
	if strings.TrimSpace(r) == "" {
		return ""
	}
	return fmt.Sprintf(" why: %q", r)
}
