package session

import (
	"context"
	"strings"

	"github.com/airlock-dev/airlock/session/push"
)

// OpenComments is the reviewer's comments the worker has not answered
// yet, one entry per repository: what the session's instructions and
// git_status carry until the worker pushes again from that repository.
// They survive a restart (the session's record keeps them).
type OpenComments = push.Open

// PushReply is Push with the worker's reply to the reviewer's comments on
// its last push from this repository: a push that asks anew answers them,
// and the reviewer reads reply with the new request (Request.Since).
func (h *Repo) PushReply(ctx context.Context, commitID, target, reply string, progress Progress) (PushResult, error) {
	spec, err := h.r.resolveSpec(target)
	if err != nil {
		return PushResult{}, h.r.wrap(err)
	}
	t, err := h.s.target(ctx, spec)
	if err != nil {
		return PushResult{}, h.r.wrap(err)
	}
	res, err := h.s.pushes.PushReply(ctx, h.r, spec, t, commitID, strings.TrimSpace(reply), progress)
	return res, h.r.wrap(err)
}

// OpenComments is the comments waiting for the worker's answer, by
// repository.
func (s *Session) OpenComments() []OpenComments {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushes.OpenLocked()
}

// OpenCommentsText is the open comments as the worker reads them in its
// instructions and in git_status: "" when there are none.
func (s *Session) OpenCommentsText() string {
	open := s.OpenComments()
	if len(open) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Open review comments: the reviewer is waiting for your answer to these.")
	for _, o := range open {
		b.WriteString("\n\n")
		where := o.Target + " (" + o.Branch + ")"
		if o.Repo != "" {
			where = "repository " + o.Repo + ", " + where
		}
		b.WriteString("On your push to " + where + ", request " + o.Request + ":\n")
		b.WriteString(o.Text)
	}
	return b.String()
}
