package review

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
)

// Review shows open requests on t, one at a time, and sends each decision
// to its server, until ctx ends; with once, it stops after one decision. A
// request that goes away while it is shown is taken off the screen, if t
// can cancel a read (the TTY can).
func Review(ctx context.Context, r *broker.Reviewer, t Terminal, once bool) error {
	canceler, _ := t.(interface {
		Cancel()
		Reset()
	})
	for {
		if len(r.Servers()) == 0 && len(r.Pending()) == 0 {
			fmt.Fprintf(t, "Waiting for push requests (no airlock server is running yet)...\n")
		}
		in, err := r.Next(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(t, "\nRequest %s from worker %q (server pid %d):\n", in.Request.ID, in.Request.Worker, in.Server.PID)
		type result struct {
			d   approval.Decision
			err error
		}
		done := make(chan result, 1)
		go func() {
			d, err := Prompt(t, in.Request)
			done <- result{d, err}
		}()
		var res result
		select {
		case res = <-done:
		case <-in.Gone():
			if canceler != nil {
				canceler.Cancel()
			}
			res = <-done
			if canceler != nil {
				canceler.Reset()
			}
			fmt.Fprintf(t, "\nThis request is gone: %s.\n", in.Why())
			continue
		case <-ctx.Done():
			if canceler != nil {
				canceler.Cancel()
			}
			<-done
			return ctx.Err()
		}
		if res.err != nil {
			if errors.Is(res.err, ErrCanceled) {
				continue
			}
			return res.err
		}
		d, err := in.Decide(res.d)
		switch {
		case err != nil:
			fmt.Fprintf(t, "  Not recorded: %v\n", err)
		case d.Verdict == approval.Reject:
			fmt.Fprintf(t, "  Rejected; the worker is told%s.\n", reasonSuffix(d.Reason))
		case d.Verdict == approval.Pick:
			fmt.Fprintf(t, "  Approved %d picked files as commit %s; the push goes ahead.\n", len(d.Paths), short(d.New))
		case in.Request.Kind == approval.KindNetwork:
			fmt.Fprintf(t, "  Allowed; the run goes ahead with the network.\n")
		default:
			fmt.Fprintf(t, "  Approved; the push goes ahead.\n")
		}
		if once && err == nil {
			return nil
		}
	}
}

func reasonSuffix(r string) string {
	if strings.TrimSpace(r) == "" {
		return ""
	}
	return fmt.Sprintf(" why: %q", r)
}
