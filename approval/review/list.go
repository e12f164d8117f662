package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// list is the reviewer's list of open requests. A request keeps its
// number while it is open, so a number typed while the list changes still
// means the request it meant; numbers start again at 1 once nothing is
// open.
type list struct {
	num  map[*broker.Incoming]int
	next int
}

func newList() *list { return &list{num: map[*broker.Incoming]int{}} }

// number forgets the requests no longer open and numbers the new ones, in
// the order they are listed.
func (l *list) number(groups []broker.ServerRequests, pending []*broker.Incoming) {
	open := map[*broker.Incoming]bool{}
	for _, in := range pending {
		open[in] = true
	}
	for in := range l.num {
		if !open[in] {
			delete(l.num, in)
		}
	}
	if len(l.num) == 0 {
		l.next = 0
	}
	eachListed(groups, func(in *broker.Incoming) {
		if l.num[in] == 0 {
			l.next++
			l.num[in] = l.next
		}
	})
}

func eachListed(groups []broker.ServerRequests, f func(*broker.Incoming)) {
	for _, srv := range groups {
		for _, sess := range srv.Sessions {
			for _, repo := range sess.Repos {
				for _, in := range repo.Requests {
					f(in)
				}
			}
		}
	}
}

// choose shows the list and asks which request to review, until the
// reviewer names one. It returns nil when fewer than two requests are left
// open (none, with force: the reviewer asked for the list): then the
// caller shows the one directly.
func (l *list) choose(ctx context.Context, r *broker.Reviewer, t Terminal, c canceler, force bool) (*broker.Incoming, error) {
	for {
		pending := r.Pending()
		if len(pending) == 0 || len(pending) < 2 && !force {
			return nil, nil
		}
		groups := broker.Grouped(pending)
		l.number(groups, pending)
		if err := l.render(t, groups, len(pending), t.Color()); err != nil {
			return nil, err
		}
		oldest := l.num[pending[0]]
		prompt := fmt.Sprintf("Review which? (a number; Enter for the oldest, %d; l to list again): ", oldest)
		line, changed, err := readWatching(ctx, r, t, c, prompt, pending)
		if err != nil {
			return nil, err
		}
		if changed {
			fmt.Fprintf(t, "\nThe pending requests changed:\n")
			continue
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			if now := r.Pending(); len(now) > 0 {
				return now[0], nil
			}
			return nil, nil
		case strings.EqualFold(line, "l"):
			continue
		}
		n, err := strconv.Atoi(line)
		if err != nil {
			fmt.Fprintf(t, "  %s is not a request number: type one of the numbers listed, Enter for the oldest, or l to list again.\n", quoted(line))
			continue
		}
		if in := l.open(r, n); in != nil {
			return in, nil
		}
		fmt.Fprintf(t, "  There is no request %d in the list (it may have been decided or withdrawn meanwhile); choose one of these:\n", n)
	}
}

// open is the request numbered n if it is still open.
func (l *list) open(r *broker.Reviewer, n int) *broker.Incoming {
	for _, in := range r.Pending() {
		if l.num[in] == n {
			return in
		}
	}
	return nil
}

// readWatching reads a line while watching the open requests: when they
// differ from shown, the read is cancelled (if t can be) and changed is
// true, so that the list is drawn again.
func readWatching(ctx context.Context, r *broker.Reviewer, t Terminal, c canceler, prompt string, shown []*broker.Incoming) (line string, changed bool, err error) {
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		line, err := t.ReadLine(prompt)
		done <- result{line, err}
	}()
	for {
		select {
		case res := <-done:
			return res.line, false, res.err
		case <-r.Changed():
			if c == nil || same(shown, r.Pending()) {
				continue
			}
			c.Cancel()
			res := <-done
			c.Reset()
			if errors.Is(res.err, ErrCanceled) {
				return "", true, nil
			}
			// The line was typed before the read was cancelled; numbers
			// do not change, so it still means what the reviewer meant.
			return res.line, false, res.err
		case <-ctx.Done():
			if c != nil {
				c.Cancel()
				<-done
			}
			return "", false, ctx.Err()
		}
	}
}

func same(a, b []*broker.Incoming) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// render writes the list: each server (pid, worker), its sessions, their
// repositories, and each request numbered with its target, branch, commit
// count, files, lines and risks. Everything a worker or a repository
// supplied goes through termsafe.
func (l *list) render(w io.Writer, groups []broker.ServerRequests, n int, color bool) error {
	p := painter(color)
	var b strings.Builder
	head := fmt.Sprintf("%d requests are waiting:", n)
	if n == 1 {
		head = "1 request is waiting:"
	}
	fmt.Fprintf(&b, "\n%s\n", p.paint(ansiBold, head))
	for _, srv := range groups {
		fmt.Fprintf(&b, "%s\n", p.paint(ansiBold, fmt.Sprintf("Server pid %d%s, worker %s", srv.Server.PID, onHost(srv.Server), quoted(srv.Server.Worker))))
		for _, sess := range srv.Sessions {
			indent := "  "
			if sess.Session != "" {
				fmt.Fprintf(&b, "%sSession %s\n", indent, quoted(sess.Session))
				indent += "  "
			}
			for _, repo := range sess.Repos {
				in := indent
				if repo.Repo != "" {
					fmt.Fprintf(&b, "%sRepository %s\n", in, quoted(repo.Repo))
					in += "  "
				}
				for _, req := range repo.Requests {
					l.renderOne(&b, in, req, srv.Server.Worker, p)
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// renderOne is one request of the list, in two lines.
func (l *list) renderOne(b *strings.Builder, indent string, in *broker.Incoming, serverWorker string, p painter) {
	r := in.Request
	num := p.paint(ansiBold, fmt.Sprintf("%3d", l.num[in]))
	pad := indent + "     "
	var worker string
	if r.Worker != serverWorker {
		worker = "  (worker " + quoted(r.Worker) + ")"
	}
	if r.Kind == approval.KindNetwork {
		fmt.Fprintf(b, "%s%s  network access for: %s\n", indent, num, termsafe.Line(clip(r.Command, 48)))
		fmt.Fprintf(b, "%swhy: %s%s\n", pad, termsafe.Line(clip(r.Reason, 48)), worker)
		return
	}
	fmt.Fprintf(b, "%s%s  %s (branch: %s)\n", indent, num, termsafe.Line(r.Describe), termsafe.Line(approval.ShortRef(r.Ref)))
	commits := plural(len(r.Commits), "commit")
	if n := len(r.BaseCommits); n > 0 {
		commits += fmt.Sprintf(" and the base's %d", n)
	}
	again := ""
	if why := askedAgain(r); why != "" {
		again = "; " + p.paint(ansiYellow, why)
	}
	fmt.Fprintf(b, "%s%s, %s%s%s%s\n", pad, commits, r.Summary(), again, riskSummary(r.Flags, p), worker)
}

// riskSummary names a request's high and medium risks in a few words:
// "  !! protected branch, CI or hook file  ! new branch".
func riskSummary(flags []approval.Flag, p painter) string {
	var high, medium []string
	for _, f := range flags {
		switch f.Severity {
		case approval.High:
			high = append(high, flagLabel(f))
		case approval.Medium:
			medium = append(medium, flagLabel(f))
		}
	}
	var s string
	if len(high) > 0 {
		s += "  " + p.paint(ansiRed+ansiBold, "!! "+termsafe.Line(strings.Join(uniq(high), ", ")))
	}
	if len(medium) > 0 {
		s += "  " + p.paint(ansiYellow, "! "+termsafe.Line(strings.Join(uniq(medium), ", ")))
	}
	return s
}
